-- Replace the text fields of one item (redacted ones, written before redaction covered them)
-- together with every index entry they name. ARGV[1]: item id; ARGV[2]: the version it was
-- read at; ARGV[3]: a JSON object of the new flat fields plus `_lists` (sessions, entities,
-- fingerprints). An item merged meanwhile is left alone ('changed': the caller reads it
-- again); an active item is unindexed under its old values and indexed under its new ones,
-- another keeps only its expiry entry. A new summary drops the item's vector (it embedded the
-- old text). Returns 'rewritten', 'changed' or 'gone'.
local existing = load(ARGV[1])
if not existing then return 'gone' end
if existing.version ~= ARGV[2] then return 'changed' end
local new = cjson.decode(ARGV[3])
local lists = new._lists
new._lists = nil
local active = existing.status == 'active'
if active then unindex(existing, true) end
local old_summary = existing.summary
for name, value in pairs(new) do existing[name] = value end
save(existing)
if active then index(existing, lists) end
if existing.summary ~= old_summary then redis.call('HDEL', key('vec'), existing.id) end
return 'rewritten'
