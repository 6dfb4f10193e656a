package rediscache

import "github.com/redis/go-redis/v9"

// The cache is changed only by these scripts, each touching the keys of
// one user (one cluster slot: see keysOf), so that writers and hydrations
// on any number of nodes merge atomically and converge whatever their
// order.
//
// The writing flag. A writer can die (or lose Redis) after its durable
// write and before its merge: the cached entries of the users it wrote
// are then behind the table, and the next writer of those users would
// compute their new state (clock, totals, sessions) from them. So an
// Apply first sets each user's flag to a token of its own (beginScript)
// and its merge deletes it (applyScript). While the flag is set, reads
// serve the user from the table and fill nothing (readUserScript,
// readSessionScript). A begin that finds a flag left behind drops the
// user's entries before setting its own; a merge that finds its flag gone
// (Redis lost it) or replaced (another begin came between) drops them
// instead of merging, and leaves another writer's flag in place. The flag
// expires with the TTL, never before the entries it guards: while it is
// set nothing extends their expiry but its own merge, which deletes it
// (the begin moved the generation on, so no fill does).
//
// Values (see encode.go):
//
//	session   "<active_ts>|<delivered>|<read>|<json of session.State>", or
//	          "-" when the table was read without the session
//	total     "<at>|<total>"; at is "?" when hydrated from the table, which
//	          does not say as of when its total is
//
// Integers are compared as decimal strings (cmp), never as Lua numbers,
// which lose precision above 2^53.

// luaLib is the helpers every script starts with.
const luaLib = `
local function cmp(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if na ~= nb then
    if na then return -1 end
    return 1
  end
  if a == b then return 0 end
  local r
  if #a ~= #b then
    if #a < #b then r = -1 else r = 1 end
  else
    if a < b then r = -1 else r = 1 end
  end
  if na then return -r end
  return r
end

local function maxs(a, b)
  if cmp(a, b) >= 0 then return a end
  return b
end

local function head(v)
  return v:match('^([^|]*)|([^|]*)|([^|]*)|(.*)$')
end

-- mergeSession merges session value v of conv into the user's sessions
-- hash and index: a newer active_ts wins; at the same active_ts only the
-- ticks are max-merged (read never above delivered); "-" (read absent)
-- is written only where nothing is. Where nothing is, v is written only
-- when create is set (a fill under a lease): a merge of a write cannot
-- tell whether a newer one came before it and was lost with the entry.
-- It returns v's active_ts ("-": nil), and whether nothing was there.
local function mergeSession(sess, idx, conv, v, create)
  local old = redis.call('HGET', sess, conv)
  if not old and not create then
    if v == '-' then return nil, true end
    return head(v), true
  end
  if v == '-' then
    if not old then redis.call('HSET', sess, conv, v) end
    return nil, not old
  end
  local a, d, r = head(v)
  local put = nil
  if not old or old == '-' then
    put = v
  else
    local oa, od, orr, rest = head(old)
    local c = cmp(a, oa)
    if c > 0 then
      put = v
    elseif c == 0 then
      local md, mr = maxs(od, d), maxs(orr, r)
      md = maxs(md, mr)
      if md ~= od or mr ~= orr then put = oa .. '|' .. md .. '|' .. mr .. '|' .. rest end
    end
  end
  if put then
    redis.call('HSET', sess, conv, put)
    redis.call('ZADD', idx, a, conv)
  end
  return a, not old
end

-- bump moves the user's generation on: a hydration that took its lease
-- before will not fill. A missing generation starts at fresh (random), so
-- that one lost with everything else (FLUSHALL) matches no lease taken
-- before.
local function bump(gen, fresh, ttl)
  if redis.call('EXISTS', gen) == 1 then
    redis.call('INCR', gen)
  else
    redis.call('SET', gen, fresh)
  end
  redis.call('PEXPIRE', gen, ttl)
end

-- lease returns the user's generation, creating it when missing.
local function lease(gen, fresh, ttl)
  local g = redis.call('GET', gen)
  if not g then
    g = fresh
    redis.call('SET', gen, g, 'PX', ttl)
  end
  return g
end

-- forget deletes the user's cached entries and moves the generation on:
-- the next read hydrates, and no hydration in flight fills.
local function forget(record, sess, idx, gen, fresh, ttl)
  redis.call('DEL', record, sess, idx)
  bump(gen, fresh, ttl)
end
`

// beginScript marks a user as being written by the Apply of token, before
// its durable write, and moves the generation on, so that no hydration
// that read before the write fills. A flag already set was left by a
// writer that died or failed before its merge (or is still writing, when
// two write one user at once): its rows may be in the table and not in
// the entries, which are dropped first.
//
//	KEYS  record, sessions, index, gen, writing
//	ARGV  token, fresh, ttl_ms
var beginScript = redis.NewScript(luaLib + `
if redis.call('EXISTS', KEYS[5]) == 1 then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
end
redis.call('SET', KEYS[5], ARGV[1], 'PX', ARGV[3])
bump(KEYS[4], ARGV[2], ARGV[3])
return 1
`)

// applyScript merges one user's rows of a durable Apply, when the user's
// writing flag still holds the Apply's token (see beginScript): it deletes
// the flag and merges, returning 1. A merge is right only over the
// entries of before the write, which the flag, unchanged since the begin,
// vouches for. When the flag is gone or holds another token, the entries
// are dropped instead (another writer's flag stays) and it returns 0.
//
//	KEYS  record, sessions, index, gen, writing
//	ARGV  ttl_ms, fresh, token, n, n × (conv, session value), m, m × (list, at, total)
//
// A session is merged only where one is cached (a value or "-"); one that
// is not moves the generation on, so that no hydration that read before
// the write fills what it read. The clock is max-merged with the
// sessions' active_ts. A total is written when newer than the cached one;
// over a hydrated total (at "?") only when newer than the clock the
// hydration read, else the record is dropped (the row may be older than
// what was read: only the table can tell). Totals move the generation on,
// so that a hydration read before them does not fill over them.
var applyScript = redis.NewScript(luaLib + `
local ttl, fresh = ARGV[1], ARGV[2]
if redis.call('GET', KEYS[5]) ~= ARGV[3] then
  forget(KEYS[1], KEYS[2], KEYS[3], KEYS[4], fresh, ttl)
  return 0
end
redis.call('DEL', KEYS[5])
local i = 4
local n = tonumber(ARGV[i]); i = i + 1
local clock = nil
local breakLeases = false
for _ = 1, n do
  local a, missing = mergeSession(KEYS[2], KEYS[3], ARGV[i], ARGV[i + 1], false); i = i + 2
  if a and (not clock or cmp(a, clock) > 0) then clock = a end
  if missing then breakLeases = true end
end
if clock then
  local c = redis.call('HGET', KEYS[1], 'c')
  if not c or cmp(clock, c) > 0 then redis.call('HSET', KEYS[1], 'c', clock) end
end
local m = tonumber(ARGV[i]); i = i + 1
if m > 0 then
  local hyd = redis.call('HGET', KEYS[1], 'h')
  local stale = false
  for _ = 1, m do
    local f, at, total = 't:' .. ARGV[i], ARGV[i + 1], ARGV[i + 2]; i = i + 3
    local old = redis.call('HGET', KEYS[1], f)
    local put = not old
    if old then
      local oat = old:match('^([^|]*)|')
      if oat == '?' then
        if hyd and cmp(at, hyd) > 0 then put = true else stale = true end
      else
        put = cmp(at, oat) > 0
      end
    end
    if put then redis.call('HSET', KEYS[1], f, at .. '|' .. total) end
  end
  breakLeases = true
  if stale then redis.call('DEL', KEYS[1]) end
end
if breakLeases then bump(KEYS[4], fresh, ttl) end
for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], ttl) end
return 1
`)

// readUserScript returns {2, ""} while the user's writing flag is set (the
// record may be behind the table: read it, do not fill), else
// {1, HGETALL record} when the record is hydrated, else {0, lease}.
//
//	KEYS  record, gen, writing
//	ARGV  fresh, ttl_ms
var readUserScript = redis.NewScript(luaLib + `
if redis.call('EXISTS', KEYS[3]) == 1 then return {2, ''} end
if redis.call('HEXISTS', KEYS[1], 'h') == 1 then
  return {1, redis.call('HGETALL', KEYS[1])}
end
return {0, lease(KEYS[2], ARGV[1], ARGV[2])}
`)

// fillUserScript installs a user record read from the table, unless the
// generation moved on since the lease: then something was written after
// the lease whose effect the read may have missed. The totals are
// replaced (at "?"), the clock max-merged, h set to the clock read.
//
//	KEYS  record, gen
//	ARGV  ttl_ms, lease, clock, n, n × (list, total)
var fillUserScript = redis.NewScript(luaLib + `
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if f:sub(1, 2) == 't:' then redis.call('HDEL', KEYS[1], f) end
end
local clock = ARGV[3]
local c = redis.call('HGET', KEYS[1], 'c')
if not c or cmp(clock, c) > 0 then redis.call('HSET', KEYS[1], 'c', clock) end
redis.call('HSET', KEYS[1], 'h', clock)
local i = 5
for _ = 1, tonumber(ARGV[4]) do
  redis.call('HSET', KEYS[1], 't:' .. ARGV[i], '?|' .. ARGV[i + 1]); i = i + 2
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`)

// readSessionScript returns {2, ""} while the user's writing flag is set
// (the session may be behind the table: read it, do not fill), else
// {1, value} when the session of a conversation is cached (a value or
// "-"), else {0, lease}.
//
//	KEYS  sessions, gen, writing
//	ARGV  conv, fresh, ttl_ms
var readSessionScript = redis.NewScript(luaLib + `
if redis.call('EXISTS', KEYS[3]) == 1 then return {2, ''} end
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then return {1, v} end
return {0, lease(KEYS[2], ARGV[2], ARGV[3])}
`)

// fillSessionScript merges a session read from the table (or "-"), unless
// the generation moved on since the lease.
//
//	KEYS  sessions, index, gen
//	ARGV  ttl_ms, lease, conv, value
var fillSessionScript = redis.NewScript(luaLib + `
if redis.call('GET', KEYS[3]) ~= ARGV[2] then return 0 end
mergeSession(KEYS[1], KEYS[2], ARGV[3], ARGV[4], true)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
`)

// dropScript deletes a user's cached entries and moves its generation on,
// so that the next read hydrates from the table and no hydration in
// flight fills what it read before. It deletes the writing flag when it
// holds token (the dropping Apply's own), not another writer's.
//
//	KEYS  record, sessions, index, gen, writing
//	ARGV  fresh, ttl_ms, token
var dropScript = redis.NewScript(luaLib + `
forget(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2])
if redis.call('GET', KEYS[5]) == ARGV[3] then redis.call('DEL', KEYS[5]) end
return 1
`)
