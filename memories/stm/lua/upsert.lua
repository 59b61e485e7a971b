-- Insert, merge or supersede items of one user atomically, each with every index and lookup.
-- ARGV[1]: now (epoch seconds); ARGV[2]: a JSON array of items, each an object of string
-- fields (structured fields JSON-encoded inside) plus `_lists`, its sessions, entities and
-- fingerprints as arrays, so indexing need not decode them again. One call per user and
-- batch: far cheaper than one call per item. Returns one {outcome, id, version,
-- superseded_id, expires_at, previous} per item (`previous`: the flat fields of the item a
-- merge or a supersede changed, as it was, so a caller whose own transaction fails can put it
-- back with undo.lua); the caller registers each expiry with ZADD LT, which keeps the user's
-- earliest one.
local now = tonumber(ARGV[1])

local function flat(item)
  local out = {}
  for name, value in pairs(item) do
    out[#out + 1] = name
    out[#out + 1] = value
  end
  return out
end

-- The transcript events a replaced statement was made of point at what replaced it, so
-- recall does not inject them as current.
local function record_replaced(old, new_id)
  local source = cjson.decode(old.source)
  for _, message_id in ipairs(source.message_ids or {}) do
    redis.call('HSET', key('replaced'), message_id, new_id)
  end
end

local function supersede(existing, new, new_lists)
  local previous = flat(existing)
  unindex(existing, true)  -- stays readable by id until it expires
  redis.call('HSET', key('item', existing.id),
    'status', 'superseded', 'superseded_by', new.id, 'updated_at', ARGV[1])
  record_replaced(existing, new.id)
  new.supersedes = existing.id
  save(new)
  index(new, new_lists)
  return {'superseded', new.id, 1, existing.id, new.expires_at, previous}
end

local function upsert_one(new)
  local new_lists = new._lists
  new._lists = nil

  local existing, matched_by = nil, nil
  if new.canonical_fact_key ~= '' then
    local id = redis.call('HGET', key('ck'), new.canonical_fact_key)
    if id then existing, matched_by = load(id), 'canonical' end
  end
  if not existing then
    local id = redis.call('HGET', key('fp'), new.fingerprint)
    if id then existing, matched_by = load(id), 'fingerprint' end
  end
  if existing and tonumber(existing.expires_at) <= now then
    purge(existing)  -- expired but not swept yet: it is gone for every purpose
    existing = nil
  end

  if not existing then
    -- A statement the write policy found it replaces (`memories/write/supersede.py`), if it
    -- is still live: else a plain insert.
    if (new.supersedes or '') ~= '' then
      local replaced = load(new.supersedes)
      if replaced and replaced.status == 'active' and tonumber(replaced.expires_at) > now then
        return supersede(replaced, new, new_lists)
      end
      new.supersedes = ''
    end
    save(new)
    index(new, new_lists)
    return {'inserted', new.id, 1, '', new.expires_at}
  end

  local previous = flat(existing)
  if matched_by == 'canonical' and new.fact_value ~= '' and existing.fact_value ~= ''
      and new.fact_value ~= existing.fact_value then
    return supersede(existing, new, new_lists)
  end

  local old_source, new_source = cjson.decode(existing.source), cjson.decode(new.source)
  local old_ids = union(old_source.message_ids or {}, old_source.tool_call_ids or {})
  local new_ids = union(new_source.message_ids or {}, new_source.tool_call_ids or {})
  if #new_ids > 0 and #union(old_ids, new_ids) == #old_ids then
    -- the same evidence delivered again (a retried extraction): nothing new to record
    return {'unchanged', existing.id, tonumber(existing.version), '', existing.expires_at}
  end

  local merged = existing
  merged.version = tostring(tonumber(existing.version) + 1)
  merged.hit_count = tostring(tonumber(existing.hit_count) + 1)
  merged.updated_at = new.updated_at
  merged.summary = new.summary
  merged.detail = new.detail
  if new.subtype ~= '' then merged.subtype = new.subtype end
  if new.fact_value ~= '' then merged.fact_value = new.fact_value end
  if existing.canonical_fact_key == '' then merged.canonical_fact_key = new.canonical_fact_key end
  local merged_lists = {
    sessions = union(list(existing.sessions), new_lists.sessions),
    entities = union(list(existing.entities), new_lists.entities),
    fingerprints = union(list(existing.fingerprints), new_lists.fingerprints),
  }
  merged.entities = encode_list(merged_lists.entities)
  merged.tags = encode_list(union(list(existing.tags), list(new.tags)))
  merged.sessions = encode_list(merged_lists.sessions)
  merged.fingerprints = encode_list(merged_lists.fingerprints)
  local kind = old_source.kind or ''
  local new_kind = new_source.kind or ''
  if new_kind ~= '' and not string.find('+' .. kind .. '+', '+' .. new_kind .. '+', 1, true) then
    kind = (kind == '' and new_kind) or (kind .. '+' .. new_kind)
  end
  merged.source = cjson.encode({
    kind = kind,
    message_ids = union(old_source.message_ids or {}, new_source.message_ids or {}),
    tool_call_ids = union(old_source.tool_call_ids or {}, new_source.tool_call_ids or {}),
  })
  -- keep the larger value's own text: tostring() would round timestamps to 14 digits
  local function larger(a, b) if tonumber(b) > tonumber(a) then return b end return a end
  merged.confidence = larger(existing.confidence, new.confidence)
  merged.importance = larger(existing.importance, new.importance)
  merged.expires_at = larger(existing.expires_at, new.expires_at)
  if new.verified == '1' then merged.verified = '1' end
  if new.remember == '1' then merged.remember = '1' end
  -- the user's word stays the user's when an agent repeats it, and becomes it when they say it
  if new.trust == 'trusted' then merged.trust = 'trusted' end
  save(merged)
  index(merged, merged_lists)
  return {'merged', merged.id, tonumber(merged.version), '', merged.expires_at, previous}
end

local results = {}
for i, item in ipairs(cjson.decode(ARGV[2])) do
  results[i] = upsert_one(item)
end
return results
