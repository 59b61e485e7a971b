"""The redaction detectors: each kind in Chinese and English, what is left alone, refusal of
values that are nothing but sensitive data, and the check of a tenant's own patterns."""

from __future__ import annotations

import re

import pytest

from memoryproject.redaction import DEFAULT, Redactor, Report, redact_record
from memoryproject.redaction_detectors import iban_valid, luhn_valid, prc_id_valid
from memoryproject.redaction_patterns import pattern_problem

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
OPENAI_KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

# (kind, text, raw value that must be gone)
CASES = [
    ("bank_card", "我的银行卡号是 6222 0212 3456 7890 123，帮我记住", "6222 0212 3456 7890 123"),
    ("bank_card", "信用卡 6222-0212-3456-7890 下个月到期", "6222-0212-3456-7890"),
    ("bank_card", "my debit card is 6222021234567890123, remember it", "6222021234567890123"),
    ("bank_card", "refund to 4111 1111 1111 1111 please", "4111 1111 1111 1111"),  # Luhn
    ("bank_card", "退款到 4111111111111111", "4111111111111111"),  # Luhn, no card word
    ("bank_card", "qty 2 4111 1111 1111 1111 paid", "4111 1111 1111 1111"),
    ("id_card", "身份证号 11010519491231002X，别外传", "11010519491231002X"),
    ("id_card", "my ID number is 110105194912310021 (typo in the check)", "110105194912310021"),
    ("id_card", "his resident id 11010519491231002x is on file", "11010519491231002x"),
    ("id_card", "老身份证 110105491231002", "110105491231002"),  # 15 digits
    ("secret", "my password is CorrectHorse99", "CorrectHorse99"),
    ("secret", "the password for prod-db is CorrectHorse99.", "CorrectHorse99"),
    ("secret", "密码是CorrectHorse99，帮我记住", "CorrectHorse99"),
    ("secret", "数据库口令：Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("secret", "staging API key = abcdef123456", "abcdef123456"),
    ("secret", "新的密钥为 q9w8e7r6t5", "q9w8e7r6t5"),
    ("secret", 'config {"token": "tok_93jd83hd"}', "tok_93jd83hd"),
    ("secret", "pwd=hunter2 then login", "hunter2"),
    ("secret", 'set secret: "correct horse battery staple"', "correct horse battery staple"),
    ("bearer_token", "curl -H 'Authorization: Bearer abc123def456ghi789'", "abc123def456ghi789"),
    ("bearer_token", "请求头带上 Bearer abc123def456ghi789 就行", "abc123def456ghi789"),
    ("jwt", f"the session cookie was {JWT}", JWT),
    ("jwt", f"令牌过期了：{JWT}", JWT),
    ("service_key", f"use {OPENAI_KEY} for the eval", OPENAI_KEY),
    ("service_key", "AWS 的 key 是 AKIAIOSFODNN7EXAMPLE 别提交", "AKIAIOSFODNN7EXAMPLE"),
    ("service_key", f"CI uses {GITHUB_TOKEN}", GITHUB_TOKEN),
    (
        "service_key",
        "slack xoxb-123456789012-abcdefghij posts alerts",
        "xoxb-123456789012-abcdefghij",
    ),
    ("iban", "pay to IBAN DE89 3704 0044 0532 0130 00 OK", "DE89 3704 0044 0532 0130 00"),
    ("iban", "我的IBAN是GB82WEST12345698765432，谢谢", "GB82WEST12345698765432"),
]


@pytest.mark.parametrize(("kind", "text", "raw"), CASES)
def test_each_kind_is_redacted_in_chinese_and_english(kind: str, text: str, raw: str) -> None:
    redacted = DEFAULT.text(text)

    assert raw not in redacted.text
    assert f"[REDACTED:{kind}]" in redacted.text
    assert kind in redacted.kinds
    assert not redacted.only_sensitive  # each sentence says something besides the value
    assert DEFAULT.text(redacted.text).text == redacted.text  # redacting again changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "order 1234 5678 9012 3456 shipped",  # no card word, fails Luhn
        "trace 1234567890123 took 40 ms",
        "the password is wrong, reset it",
        "密码错了",
        "max_tokens: 1500 and token budget 2000",
        "IBAN GB82WEST12345698765433 fails the check",
        "PR #4111 merged at 2024-01-31 10:00",
        "call 138 0013 8000 tomorrow",
        "createOrder 在 prod-k8s 超时，数据库已排除",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert DEFAULT.text(text).text == text


@pytest.mark.parametrize(
    "text",
    [
        "6222 0212 3456 7890 123 银行卡",
        "4111-1111-1111-1111",
        "password is CorrectHorse99",
        "密码：CorrectHorse99",
        OPENAI_KEY,
        f"Bearer {JWT}",
        "  DE89370400440532013000 ",
    ],
)
def test_a_value_of_nothing_but_sensitive_data_says_so(text: str) -> None:
    assert DEFAULT.text(text).only_sensitive


def test_a_field_name_says_what_its_value_is() -> None:
    report = Report()
    value = {
        "password": "hunter2",
        "card_number": "6222 0212 3456 7890 123",
        "github_token": 12345678,
        "max_tokens": 1500,
        "nested": {"id_number": "110105491231002", "note": "fine"},
    }

    redacted = DEFAULT.value(value, path="extras", report=report)

    assert redacted == {
        "password": "[REDACTED:secret]",
        "card_number": "[REDACTED:bank_card]",
        "github_token": "[REDACTED:secret]",
        "max_tokens": 1500,
        "nested": {"id_number": "[REDACTED:id_card]", "note": "fine"},
    }
    assert sorted(report.emptied) == [
        "extras.card_number",
        "extras.github_token",
        "extras.nested.id_number",
        "extras.password",
    ]
    assert report.kinds == {"secret", "bank_card", "id_card"}


def test_strings_leave_out_list_entries_that_were_all_sensitive() -> None:
    report = Report()

    kept = DEFAULT.strings(
        ["payments", "4111 1111 1111 1111", "refund 4111111111111111"], path="tags", report=report
    )

    assert kept == ["payments", "refund [REDACTED:bank_card]"]
    assert report.emptied == ["tags.1"]


def test_a_tenants_patterns_are_redacted_as_custom() -> None:
    redactor = Redactor([re.compile(r"EMP-\d{6}", re.IGNORECASE)])

    redacted = redactor.text("员工号 emp-123456 已停用")

    assert redacted.text == "员工号 [REDACTED:custom] 已停用"
    assert redacted.kinds == {"custom"}
    assert DEFAULT.text("员工号 emp-123456 已停用").kinds == set()


def test_the_checks() -> None:
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert prc_id_valid("11010519491231002X") and not prc_id_valid("110105194912310021")
    assert prc_id_valid("110105491231002") and not prc_id_valid("110105491331002")
    assert iban_valid("DE89370400440532013000") and not iban_valid("DE89370400440532013001")


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        (r"EMP-\d{6}", None),
        (r"\binternal-[a-z0-9]{20,40}\b", None),
        (r"(", "Not a valid pattern"),
        (r"x*", "Matches the empty text"),
        (r"(a+)+b", "Repeats a repetition"),
        (r"(\w+\s?)+$", "Repeats a repetition"),
        (r"(\d)\1", "backreference"),
        (r"(a|aa)+$", "Too slow"),
        (r"(.|\s)+x", "Too slow"),
        ("a" * 501, "Longer than 500"),
    ],
)
def test_a_tenants_pattern_is_refused_when_bad_or_catastrophic(
    pattern: str, problem: str | None
) -> None:
    found = pattern_problem(pattern)

    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_a_value_found_in_one_field_is_redacted_in_every_field_of_the_record() -> None:
    def redact(redactor: Redactor, report: Report) -> dict[str, object]:
        return {
            "summary": redactor.value(
                "my password is hunter2x06 and my card 5500 0600 0000 0001",
                path="summary",
                report=report,
            ),
            "entities": redactor.strings(
                ["hunter2x06", "5500060000000001", "billing", "HUNTER2X06 again"],
                path="entities",
                report=report,
            ),
        }

    record, report = redact_record(DEFAULT, redact)

    assert record == {
        "summary": "my password is [REDACTED:secret] and my card [REDACTED:bank_card]",
        "entities": ["billing", "[REDACTED:secret] again"],
    }
    assert report.emptied == ["entities.0", "entities.1"]
    assert report.kinds == {"secret", "bank_card"}
    # Alone, neither bare value looks sensitive: no keyword, and the number fails Luhn.
    assert DEFAULT.text("hunter2x06").kinds == DEFAULT.text("5500 0600 0000 0001").kinds == set()


def test_a_known_value_is_found_only_as_a_whole_word_and_not_when_short() -> None:
    redactor = DEFAULT.knowing({"hunter2x06": "secret", "42": "secret"})

    assert redactor.text("xhunter2x06 and hunter2x066 stay").text == (
        "xhunter2x06 and hunter2x066 stay"
    )
    assert redactor.text("pin 42 is too short to look for").text == (
        "pin 42 is too short to look for"
    )
    assert redactor.text("(hunter2x06)").text == "([REDACTED:secret])"
