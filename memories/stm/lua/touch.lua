-- Record that recall injected items: add to `recall_count`, move `last_access_at` forward.
-- ARGV[1]: now; ARGV[2]: JSON object id -> times recalled. Items gone or no longer active
-- are skipped, so a late update never recreates a deleted item as a partial hash.
local now = ARGV[1]
local touched = 0
for id, times in pairs(cjson.decode(ARGV[2])) do
  local item_key = key('item', id)
  local fields = redis.call('HMGET', item_key, 'status', 'last_access_at')
  if fields[1] == 'active' then
    redis.call('HINCRBY', item_key, 'recall_count', tonumber(times))
    if tonumber(fields[2] or '0') < tonumber(now) then
      redis.call('HSET', item_key, 'last_access_at', now)
    end
    touched = touched + 1
  end
end
return touched
