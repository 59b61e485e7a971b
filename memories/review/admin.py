"""The reviewers' screens: promotion, verification, deletion and quarantine queues, the
end-user memory page."""

from memories.review import (  # noqa: F401
    admin_deletion,
    admin_promotion,
    admin_quarantine,
    admin_users,
    admin_verification,
)
