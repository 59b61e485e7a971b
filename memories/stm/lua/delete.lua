-- Delete one item and every index and lookup entry of it. ARGV[1]: item id.
-- Returns {deleted (0/1), next_expiry}.
local item = load_for_purge(ARGV[1])
if not item then return {0, next_expiry()} end
purge(item)
return {1, next_expiry()}
