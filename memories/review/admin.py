"""The reviewers' screens: promotion and deletion queues, the end-user memory page."""

from memories.review import admin_deletion, admin_promotion, admin_users  # noqa: F401
