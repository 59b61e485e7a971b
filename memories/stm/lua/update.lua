-- Change some fields of one active item in place (an API edit), with every index entry they
-- name. ARGV[1]: item id; ARGV[2]: the version it was read at; ARGV[3]: now; ARGV[4]: a JSON
-- object of the changed flat fields plus `_lists` (the item's sessions, entities and
-- fingerprints as they will be). An item merged or edited meanwhile is left alone ('changed':
-- the caller reads it again); one superseded or gone is 'gone'. The item keeps its id, its
-- version goes up by one and `updated_at` becomes now; it is unindexed under its old values
-- and indexed under its new ones (its expiry too). A new summary drops the item's vector (it
-- embedded the old text). Returns {outcome, version, next_expiry, previous} (`previous`: the
-- flat fields as they were, so a caller whose own transaction fails can put them back).
local existing = load(ARGV[1])
if not existing or existing.status ~= 'active' then return {'gone', 0, next_expiry(), {}} end
if existing.version ~= ARGV[2] then
  return {'changed', tonumber(existing.version), next_expiry(), {}}
end
local previous = {}
for name, value in pairs(existing) do
  previous[#previous + 1] = name
  previous[#previous + 1] = value
end
local new = cjson.decode(ARGV[4])
local lists = new._lists
new._lists = nil
unindex(existing, false)
local old_summary = existing.summary
for name, value in pairs(new) do existing[name] = value end
existing.version = tostring(tonumber(ARGV[2]) + 1)
existing.updated_at = ARGV[3]
save(existing)
index(existing, lists)
if existing.summary ~= old_summary then redis.call('HDEL', key('vec'), existing.id) end
return {'updated', tonumber(existing.version), next_expiry(), previous}
