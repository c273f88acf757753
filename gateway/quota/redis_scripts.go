package quota

// The two scripts run atomically on the store: Redis (and Valkey) execute a
// script to its end before serving any other command, so no other replica's
// Reserve or Settle can interleave between the checks and the writes.
//
// Budgets are int64 pico-units, beyond what a Lua number (a double) holds
// exactly, so window counters never pass through Lua arithmetic: they are
// compared as decimal strings (cmp) and changed with INCRBY/DECRBY, which
// Redis computes in int64. Buckets (requests and tokens per minute) refill
// continuously and are fractional anyway: they are Lua numbers.
//
// Times are unix microseconds (exact in a double until the year 2255).
//
// Keys: a bucket is a hash {t = tokens, ts = unix µs of t}; a missing bucket
// is full. A window is an integer string (the amount used); a missing window
// is unused. A tally is a window (the same key: a budget configured later
// finds the use tallied before it). A reservation is a JSON list of what it
// took, with a TTL.

// refillLua is what both scripts do to a bucket before they change it: its
// tokens now, refilled continuously since it was last written (a missing
// bucket is full), and the time they are counted at.
const refillLua = `
local function refilled(key, cap, period, now)
  local st = redis.call('HMGET', key, 't', 'ts')
  local tokens, ts = tonumber(st[1]), tonumber(st[2])
  if tokens == nil or ts == nil then
    return cap, now
  end
  if now > ts then
    return tokens + (now - ts) * cap / period, now
  end
  return tokens, ts
end
`

// reserveScript: KEYS[1] the reservation, KEYS[2..n+1] the counters.
// ARGV: now_us, ttl_ms, remember (1: keep a reservation entry), grace_ms
// (how long a window outlives its end), then per limit: kind ("b" bucket,
// "w" window, "t" tally: a window that never refuses), capacity, period_us
// (bucket) or end_us (window, tally), amount, and for a window
// capacity-amount (the highest use that still has room), all as decimal
// strings.
// Returns {allowed (1 or 0), denied index, retry_us, state...}: one state
// per limit, after the take when allowed, as found when refused: a
// bucket's tokens ("%.17g"), a window's or tally's use (a decimal
// integer). A retried call (the reservation already exists) is allowed
// without taking again, and answers with the counters as they are.
const reserveScript = refillLua + `
local function cmp(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if na ~= nb then if na then return -1 end return 1 end
  if na then a, b = b:sub(2), a:sub(2) end
  if #a ~= #b then if #a < #b then return -1 end return 1 end
  if a == b then return 0 end
  if a < b then return -1 end
  return 1
end

local now = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local remember = ARGV[3] == '1'
local grace = tonumber(ARGV[4])
local n = #KEYS - 1
local lims = {}
local denied, retry = -1, 0
for i = 1, n do
  local b = 5 + (i - 1) * 5
  local l = {key = KEYS[i + 1], kind = ARGV[b], cap = ARGV[b + 1], pe = ARGV[b + 2], amount = ARGV[b + 3], lim = ARGV[b + 4]}
  if l.kind == 'b' then
    local cap, period, amount = tonumber(l.cap), tonumber(l.pe), tonumber(l.amount)
    local tokens, ts = refilled(l.key, cap, period, now)
    if tokens > cap then tokens = cap end
    l.tokens, l.ts = tokens, ts
    if denied < 0 and tokens < amount then
      denied, retry = i - 1, math.ceil((amount - tokens) * period / cap)
    end
  else
    l.used = redis.call('GET', l.key) or '0'
    if denied < 0 and l.kind == 'w' and cmp(l.used, l.lim) > 0 then
      denied, retry = i - 1, math.max(0, tonumber(l.pe) - now)
    end
  end
  lims[i] = l
end
local function answer(allowed, index, wait)
  local out = {allowed, index, wait}
  for i = 1, n do
    local l = lims[i]
    if l.kind == 'b' then
      out[i + 3] = string.format('%.17g', l.tokens)
    else
      out[i + 3] = l.used
    end
  end
  return out
end
if remember and redis.call('EXISTS', KEYS[1]) == 1 then
  return answer(1, 0, 0)
end
if denied >= 0 then
  return answer(0, denied, retry)
end
local saved = {}
for i = 1, n do
  local l = lims[i]
  if l.kind == 'b' then
    local cap, period = tonumber(l.cap), tonumber(l.pe)
    local tokens = l.tokens - tonumber(l.amount)
    redis.call('HSET', l.key, 't', string.format('%.17g', tokens), 'ts', string.format('%d', l.ts))
    redis.call('PEXPIRE', l.key, math.ceil((cap - tokens) * period / cap / 1000) + grace)
    l.tokens = tokens
  else
    redis.call('INCRBY', l.key, l.amount)
    -- GET, not INCRBY's reply: a Lua number would round a large use.
    l.used = redis.call('GET', l.key)
    redis.call('PEXPIREAT', l.key, math.ceil(tonumber(l.pe) / 1000) + grace)
  end
  saved[i] = {l.key, l.kind, l.cap, l.pe, l.amount}
end
if remember then
  redis.call('SET', KEYS[1], cjson.encode(saved), 'PX', ttl)
end
return answer(1, 0, 0)
`

// settleScript: KEYS[1] the reservation. ARGV: now_us, grace_ms, then
// either "z" (release: zero for every limit) or one actual amount per limit
// of the reservation (decimal strings).
// Returns 1 when it settled, 0 when there was nothing to settle.
//
// The counters' names are read from the reservation, so they are not in
// KEYS: the store must be a single Redis/Valkey primary (not Cluster).
const settleScript = refillLua + `
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local saved = cjson.decode(raw)
local now = tonumber(ARGV[1])
local grace = tonumber(ARGV[2])
local zeros = ARGV[3] == 'z'
if not zeros and #ARGV - 2 ~= #saved then
  return redis.error_reply('llmgw: settle with ' .. (#ARGV - 2) .. ' amounts for a reservation of ' .. #saved .. ' limits')
end
redis.call('DEL', KEYS[1])
for i, s in ipairs(saved) do
  local key, kind, actual = s[1], s[2], ARGV[i + 2]
  if zeros then actual = '0' end
  if kind == 'b' then
    local cap, period = tonumber(s[3]), tonumber(s[4])
    local tokens, ts = refilled(key, cap, period, now)
    tokens = tokens + tonumber(s[5]) - tonumber(actual)
    if tokens > cap then tokens = cap end
    redis.call('HSET', key, 't', string.format('%.17g', tokens), 'ts', string.format('%d', ts))
    redis.call('PEXPIRE', key, math.ceil((cap - tokens) * period / cap / 1000) + grace)
  elseif now < tonumber(s[4]) and redis.call('EXISTS', key) == 1 then
    -- a window or a tally ('w' or 't'): the same representation
    redis.call('INCRBY', key, actual)
    redis.call('DECRBY', key, s[5])
  end
end
return 1
`
