/**
 * The objects-per-second limits of durable migrations, per migration and per tenant, kept in
 * Redis so that every worker on every machine spends the same allowance. Generic cell rate
 * (GCRA): each limit is a "theoretical arrival time" key; a chunk of n objects may start when
 * both keys allow it and then moves both by n / rate seconds. A chunk that may not start yet is
 * told how long to wait and reserves nothing. Redis's own clock (TIME) is the one clock.
 */
import type { Redis } from 'ioredis';

/** How far ahead of its rate a limit lets work start (one second of burst). */
const BURST_MS = 1000;

const SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local burst = tonumber(ARGV[1])
local wait = 0
local tats = {}
for i, key in ipairs(KEYS) do
  local cost = tonumber(ARGV[i + 1])
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  tats[i] = tat
  if cost > 0 and tat - now - burst > wait then wait = tat - now - burst end
end
if wait > 0 then return wait end
for i, key in ipairs(KEYS) do
  local cost = tonumber(ARGV[i + 1])
  if cost > 0 then
    local next = tats[i] + cost
    redis.call('SET', key, next, 'PX', math.ceil(next - now + burst + 1000))
  end
end
return 0
`;

export interface RateLimits {
  prefix: string;
  migrationId: string;
  tenantId: string;
  /** Objects per second of the migration; 0: none. */
  migrationRate: number;
  /** Objects per second of all the tenant's migrations; 0: none. */
  tenantRate: number;
}

/**
 * Reserves `objects` against both limits; answers 0 when the chunk may start now (the allowance is
 * spent), else the milliseconds to wait before asking again (nothing spent).
 */
export async function reserveObjects(
  redis: Redis,
  l: RateLimits,
  objects: number,
): Promise<number> {
  if (objects === 0 || (l.migrationRate <= 0 && l.tenantRate <= 0)) return 0;
  const cost = (rate: number) => (rate > 0 ? Math.ceil((objects * 1000) / rate) : 0);
  const wait = await redis.eval(
    SCRIPT,
    2,
    `${l.prefix}:migrate:rate:migration:${l.migrationId}`,
    `${l.prefix}:migrate:rate:tenant:${l.tenantId}`,
    BURST_MS,
    cost(l.migrationRate),
    cost(l.tenantRate),
  );
  return Number(wait);
}
