-- Shared by every short-term memory script. KEYS[1] is the user's key base (see keys.py);
-- all other keys are derived from it, so they share its hash tag and its cluster slot.
local base = KEYS[1]

local function key(name, value)
  if value then return base .. ':' .. name .. ':' .. value end
  return base .. ':' .. name
end

local function list(value)
  if value == nil or value == '' then return {} end
  local decoded = cjson.decode(value)
  if type(decoded) ~= 'table' then return {} end
  return decoded
end

local function encode_list(values)
  if #values == 0 then return '[]' end
  return cjson.encode(values)
end

local function union(a, b)
  local seen, out = {}, {}
  for _, source in ipairs({a, b}) do
    for _, value in ipairs(source) do
      if not seen[value] then
        seen[value] = true
        out[#out + 1] = value
      end
    end
  end
  return out
end

local function load(id)
  local raw = redis.call('HGETALL', key('item', id))
  if #raw == 0 then return nil end
  local item = {}
  for i = 1, #raw, 2 do item[raw[i]] = raw[i + 1] end
  return item
end

local function save(item)
  local flat = {}
  for name, value in pairs(item) do
    flat[#flat + 1] = name
    flat[#flat + 1] = value
  end
  redis.call('HSET', key('item', item.id), unpack(flat))
end

-- Every index and lookup an active item belongs in. `lists` holds the item's sessions,
-- entities and fingerprints already decoded (callers have them; decoding again costs).
local function index(item, lists)
  local id, score = item.id, tonumber(item.updated_at)
  redis.call('ZADD', key('recent'), score, id)
  redis.call('ZADD', key('expire'), tonumber(item.expires_at), id)
  redis.call('ZADD', key('type', item.memory_type), score, id)
  if item.task_id ~= '' then redis.call('ZADD', key('task', item.task_id), score, id) end
  for _, s in ipairs(lists.sessions) do redis.call('ZADD', key('session', s), score, id) end
  for _, e in ipairs(lists.entities) do
    redis.call('ZADD', key('entity', string.lower(e)), score, id)
  end
  for _, fp in ipairs(lists.fingerprints) do redis.call('HSET', key('fp'), fp, id) end
  if item.canonical_fact_key ~= '' then
    redis.call('HSET', key('ck'), item.canonical_fact_key, id)
  end
end

-- Remove an item from every index; lookups only where they still point at it.
local function unindex(item, keep_expire)
  local id = item.id
  redis.call('ZREM', key('recent'), id)
  if not keep_expire then redis.call('ZREM', key('expire'), id) end
  redis.call('ZREM', key('type', item.memory_type), id)
  if item.task_id ~= '' then redis.call('ZREM', key('task', item.task_id), id) end
  for _, s in ipairs(list(item.sessions)) do redis.call('ZREM', key('session', s), id) end
  for _, e in ipairs(list(item.entities)) do redis.call('ZREM', key('entity', string.lower(e)), id) end
  for _, fp in ipairs(list(item.fingerprints)) do
    if redis.call('HGET', key('fp'), fp) == id then redis.call('HDEL', key('fp'), fp) end
  end
  local ck = item.canonical_fact_key
  if ck ~= '' and redis.call('HGET', key('ck'), ck) == id then redis.call('HDEL', key('ck'), ck) end
end

-- Just the fields unindex() needs: far cheaper than HGETALL when deleting in bulk.
local INDEX_FIELDS = {'memory_type', 'task_id', 'sessions', 'entities', 'fingerprints',
  'canonical_fact_key'}

local function load_for_purge(id)
  local values = redis.call('HMGET', key('item', id), unpack(INDEX_FIELDS))
  if not values[1] then return nil end
  local item = {id = id}
  for i, name in ipairs(INDEX_FIELDS) do item[name] = values[i] or '' end
  return item
end

local function purge(item)
  unindex(item, false)
  redis.call('DEL', key('item', item.id))
  redis.call('HDEL', key('vec'), item.id)
end

-- The user's earliest expiry ('' when nothing is left), for the global expiring registry.
local function next_expiry()
  local first = redis.call('ZRANGE', key('expire'), 0, 0, 'WITHSCORES')
  if #first == 0 then return '' end
  return first[2]
end
