from django.db import migrations

# Audit rows are never changed or removed, whoever asks. Removing a whole tenant's trail is
# possible only inside a transaction that sets memory.audit_purge = 'on' (tenant removal).
APPEND_ONLY = """
CREATE FUNCTION memories_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('memory.audit_purge', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit events are append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER memories_auditevent_append_only
    BEFORE UPDATE OR DELETE ON memories_auditevent
    FOR EACH ROW EXECUTE FUNCTION memories_auditevent_append_only();
"""

REMOVE = """
DROP TRIGGER IF EXISTS memories_auditevent_append_only ON memories_auditevent;
DROP FUNCTION IF EXISTS memories_auditevent_append_only();
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0005_promotion_deletion_audit")]

    operations = [migrations.RunSQL(APPEND_ONLY, reverse_sql=REMOVE)]
