-- Undo upserts of one user whose caller's transaction failed after they landed. ARGV[1]: a
-- JSON array of steps, in reverse order of the upserts: {drop = id} deletes an item the upsert
-- inserted, {restore = {field, value, ...}} puts back an item it merged into or superseded,
-- indexes and lookups included. Returns the user's earliest expiry ('' when nothing is left).
for _, step in ipairs(cjson.decode(ARGV[1])) do
  if step.drop then
    local item = load_for_purge(step.drop)
    if item then purge(item) end
  else
    local old = {}
    for i = 1, #step.restore, 2 do old[step.restore[i]] = step.restore[i + 1] end
    local current = load_for_purge(old.id)
    local vector = redis.call('HGET', key('vec'), old.id)  -- of the summary put back
    if current then purge(current) end
    save(old)
    if vector then redis.call('HSET', key('vec'), old.id, vector) end
    index(old, {
      sessions = list(old.sessions),
      entities = list(old.entities),
      fingerprints = list(old.fingerprints),
    })
  end
end
return next_expiry()
