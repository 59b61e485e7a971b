"""The reviewers' screens: promotion, verification and deletion queues, the end-user memory
page."""

from memories.review import (  # noqa: F401
    admin_deletion,
    admin_promotion,
    admin_users,
    admin_verification,
)
