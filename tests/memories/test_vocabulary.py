"""The word lists: Latin names inside Chinese text, and the spellings of one thing."""

from __future__ import annotations

from memories.vocabulary import compile_pattern, default_vocabulary


def test_a_latin_name_next_to_chinese_characters_is_found() -> None:
    vocabulary = default_vocabulary()

    assert vocabulary.find_entities("billing-api的连接池现在什么情况？") == [
        "billing-api",
        "连接池",
    ]
    assert vocabulary.find_entities("查一下bug456和prod-k8s") == ["bug456", "prod-k8s"]
    assert vocabulary.findall("error_name", "又报NullPointerException了") == [
        "NullPointerException"
    ]
    # a tenant's own pattern of those kinds reads Chinese text the same way
    assert compile_pattern("entity_pattern", r"\b[a-z]+-job\b").findall("跑billing-job的时候") == [
        "billing-job"
    ]


def test_synonyms_are_the_dictionary_terms_spelling_the_same_thing() -> None:
    vocabulary = default_vocabulary()

    assert vocabulary.synonyms(["db pool"]) == ["connection pool", "连接池"]
    assert vocabulary.synonyms(["连接池", "billing-api"]) == ["connection pool", "连接池"]
    assert vocabulary.synonyms(["pool", "billing-api"]) == []
    assert vocabulary.synonyms_in("the database is ruled out") == ["database", "数据库"]
    assert vocabulary.synonyms_in("问题出在线程池") == ["thread pool", "线程池"]
    extended = vocabulary.extended(
        [("entity", "订单服务"), ("entity_synonym", "订单服务|order-svc")]
    )
    assert extended.synonyms(["order-svc"]) == ["订单服务"]
