-- Keep the embeddings of items whose summary is still the one that was embedded (a merge may
-- have rewritten it meanwhile). ARGV: id, SHA1 of the summary, vector bytes; repeated.
-- Returns how many were kept.
local kept = 0
for i = 1, #ARGV, 3 do
  local id = ARGV[i]
  local summary = redis.call('HGET', key('item', id), 'summary')
  if summary and redis.sha1hex(summary) == ARGV[i + 1] then
    redis.call('HSET', key('vec'), id, ARGV[i + 2])
    kept = kept + 1
  end
end
return kept
