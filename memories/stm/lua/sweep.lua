-- Delete up to ARGV[2] items whose expires_at <= ARGV[1], with all their index entries.
-- Returns {removed, next_expiry}.
local due = redis.call('ZRANGEBYSCORE', key('expire'), '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local removed = 0
for _, id in ipairs(due) do
  local item = load_for_purge(id)
  if item then
    purge(item)
    removed = removed + 1
  else
    redis.call('ZREM', key('expire'), id)
  end
end
return {removed, next_expiry()}
