"""Staff sign-in attempts, throttled per (e-mail, client address), per e-mail and per address:
in-process or in Redis.

The rule, the same in both, over a sliding window of :data:`WINDOW_S`:

* at most :data:`MAX_FAILURES` attempts for one e-mail from one client address;
* at most :data:`MAX_ACCOUNT_FAILURES` attempts for one e-mail from all addresses together,
  so an attacker who rotates addresses (a botnet, an IPv6 /64) still meets a limit per account;
* at most :data:`MAX_ADDRESS_FAILURES` attempts from one address for all e-mails together, so
  one address cannot keep the few hashing slots busy with made-up e-mails.

The last two do not apply to an (e-mail, address) that signed in within
:data:`KNOWN_ADDRESS_S`: whoever floods an account or an address to lock others out cannot lock
staff out of their usual places (office, home), where only the per-pair limit applies. Only a
right password makes an address known, so an attacker cannot make their own addresses known.

Why an attempt is counted BEFORE its password is hashed (:meth:`SignInThrottling.admit`, one
atomic check-and-count): hashing takes a noticeable time (argon2id, 64 MiB), and a check made
before it and a failure recorded after it let every request that arrived in between through
(30 concurrent wrong passwords all reached the hasher against a limit of 5). So the
check and the count are one step under a lock (in-process) or one Lua script (Redis), so at
most the limit reaches the hasher however many arrive at once. An attempt that turns out right
gives its count back (:meth:`SignInThrottling.succeeded` clears the pair and returns the
attempt to the account and the address), as does one that never reached the hasher because
every hashing slot was busy (:meth:`SignInThrottling.withdraw`). A refused attempt counts
nothing, so a lock opens when its oldest attempt leaves the window, however often it knocks.

* :class:`SignInThrottle` counts in this process: with several workers each counts alone, so
  the effective limits are workers x the limits. The default without ``SIZER_REDIS_URL``. Its
  tables are bounded (:data:`MAX_TRACKED`) by dropping the least recently tried entries, never
  by wiping them all: a flood of made-up e-mails could otherwise reset a locked pair. Filling
  a table takes :data:`MAX_TRACKED` admitted attempts from :data:`MAX_TRACKED` /
  :data:`MAX_ADDRESS_FAILURES` addresses, and every admitted attempt costs a password hash,
  of which a process runs only a few at once (:data:`app.accounts.passwords.HASHING_SLOTS`).
* :class:`RedisSignInThrottle` keeps the attempt times of each pair, account and address in
  Redis sorted sets, so all workers share one count. Keys are HMACs of the pair, e-mail or
  address (:mod:`app.shared_store`): no e-mail or address is stored in Redis.

When Redis does not answer, :class:`RedisSignInThrottle` falls back to an in-process
:class:`SignInThrottle` (fails OPEN to per-worker throttling) and logs one warning per outage.
Why not fail closed: refusing every sign-in would lock the sales staff out of the desk for as
long as a cache is down, while an attacker gains little: guessing still meets
workers x 5 tries per 15 minutes per address, argon2id hashes and 12-character passwords,
which is the protection every deployment without Redis has.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import redis

from app.accounts.staff import normalize_email
from app.shared_store import SharedStore

MAX_FAILURES = 5
"""Attempts per (e-mail, client address) and window: a person who mistypes a password a few
times is not locked out; a guesser from one address gets 20 tries an hour."""

MAX_ACCOUNT_FAILURES = 20
"""Attempts per e-mail and window from all addresses together: four addresses' worth of
:data:`MAX_FAILURES` (an office behind a few NAT addresses, a phone, home), while an attacker
rotating addresses gets 80 tries an hour instead of unlimited ones."""

MAX_ADDRESS_FAILURES = 50
"""Attempts per client address and window for all e-mails together: ten people's worth of
:data:`MAX_FAILURES` behind one office NAT, while one address flooding made-up e-mails gets 50
password hashes per window instead of keeping the hashing slots busy."""

WINDOW_S = 15 * 60.0
"""The sliding window of every limit (OWASP's usual lockout period)."""

KNOWN_ADDRESS_S = 30 * 24 * 3600.0
"""How long a successful sign-in exempts its (e-mail, address) from the per-account and
per-address limits: a month covers holidays without keeping a stale address trusted forever."""

MAX_TRACKED = 100_000
"""Entries per in-process table (pairs, accounts, addresses, known pairs): tens of MB at the
worst; beyond it the least recently tried (or signed in) entry is dropped."""


@dataclass(frozen=True, slots=True)
class Admission:
    """The throttle's answer to one sign-in attempt: counted (``allowed``) or refused.

    ``attempt`` names the counted attempt, so it can be given back when the password was right
    or never checked; it is empty for a refused attempt, which counted nothing.
    """

    account: str
    client: str
    retry_after_s: int
    attempt: str = ""

    @property
    def allowed(self) -> bool:
        return self.retry_after_s == 0


class SignInThrottling(Protocol):
    """What the sign-in route asks before checking a password, and tells after."""

    def admit(self, *, email: str, client: str) -> Admission:
        """Count this attempt if every limit allows one more; else say how long to wait."""
        ...

    def succeeded(self, admission: Admission) -> None:
        """The password was right: clear the pair, give the attempt back to the account and
        the address, and know the pair from now on."""
        ...

    def withdraw(self, admission: Admission) -> None:
        """The password was never checked (no hashing slot): give the attempt back."""
        ...


def _wait_s(leaving: float, now: float) -> int:
    """Seconds until the attempt made at ``leaving`` is out of the window (at least 1)."""
    return max(1, int(leaving + WINDOW_S - now) + 1)


class _Window:
    """Attempt times per key in the sliding window, at most :data:`MAX_TRACKED` keys, the least
    recently tried first out. Not locked: :class:`SignInThrottle` holds its lock around it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._attempts: OrderedDict[str | tuple[str, str], list[tuple[float, str]]] = (
            OrderedDict()
        )

    def __len__(self) -> int:
        return len(self._attempts)

    def _recent(self, key: str | tuple[str, str], now: float) -> list[tuple[float, str]]:
        kept = [entry for entry in self._attempts.get(key, []) if now - entry[0] < WINDOW_S]
        if kept:
            self._attempts[key] = kept
        else:
            self._attempts.pop(key, None)
        return kept

    def wait_s(self, key: str | tuple[str, str], now: float) -> int:
        """0 while the key is under its limit; else seconds until it is again."""
        recent = self._recent(key, now)
        if len(recent) < self.limit:
            return 0
        return _wait_s(recent[len(recent) - self.limit][0], now)

    def add(self, key: str | tuple[str, str], now: float, attempt: str) -> None:
        self._attempts.setdefault(key, []).append((now, attempt))
        self._attempts.move_to_end(key)
        while self._attempts:  # entries tried longest ago first: drop expired ones, then extras
            oldest_key, oldest = next(iter(self._attempts.items()))
            if len(self._attempts) <= MAX_TRACKED and now - oldest[-1][0] < WINDOW_S:
                break
            del self._attempts[oldest_key]

    def remove(self, key: str | tuple[str, str], attempt: str) -> None:
        kept = [entry for entry in self._attempts.get(key, []) if entry[1] != attempt]
        if kept:
            self._attempts[key] = kept
        else:
            self._attempts.pop(key, None)

    def clear(self, key: str | tuple[str, str]) -> None:
        self._attempts.pop(key, None)


class SignInThrottle:
    """Every limit in this process, checked and counted under one lock."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._pairs = _Window(MAX_FAILURES)
        self._accounts = _Window(MAX_ACCOUNT_FAILURES)
        self._addresses = _Window(MAX_ADDRESS_FAILURES)
        self._known_until: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._ids = itertools.count(1)

    def tracked(self) -> tuple[int, int, int]:
        """(pairs, accounts, addresses) held now: what :data:`MAX_TRACKED` bounds."""
        with self._lock:
            return len(self._pairs), len(self._accounts), len(self._addresses)

    def _shared(self, account: str, client: str) -> tuple[tuple[_Window, str], ...]:
        """The windows beside the pair's, with the attempt's key in each."""
        return (self._accounts, account), (self._addresses, client)

    def admit(self, *, email: str, client: str) -> Admission:
        account = normalize_email(email)
        pair = (account, client)
        with self._lock:
            now = self._clock()
            waits = [self._pairs.wait_s(pair, now)]
            if self._known_until.get(pair, now) <= now:  # not a place this e-mail signed in
                waits += [window.wait_s(key, now) for window, key in self._shared(*pair)]
            if max(waits):
                return Admission(account, client, max(waits))
            attempt = str(next(self._ids))
            self._pairs.add(pair, now, attempt)
            for window, key in self._shared(*pair):
                window.add(key, now, attempt)
        return Admission(account, client, 0, attempt)

    def succeeded(self, admission: Admission) -> None:
        pair = (admission.account, admission.client)
        with self._lock:
            self._pairs.clear(pair)
            for window, key in self._shared(*pair):
                window.remove(key, admission.attempt)
            self._known_until[pair] = self._clock() + KNOWN_ADDRESS_S
            self._known_until.move_to_end(pair)
            while len(self._known_until) > MAX_TRACKED:
                self._known_until.popitem(last=False)

    def withdraw(self, admission: Admission) -> None:
        pair = (admission.account, admission.client)
        with self._lock:
            self._pairs.remove(pair, admission.attempt)
            for window, key in self._shared(*pair):
                window.remove(key, admission.attempt)


# KEYS: the pair's, the account's and the address's sorted sets, then the pair's "known" flag.
# ARGV: now, window, expiry (s), the attempt's member, the three limits. Returns, per set, the
# time of the attempt whose leaving the window would let one more in ("" when under the limit,
# or for the account and address when the pair is known); adds the attempt to all three only
# when none refuses. One script, so Redis runs it without interleaving.
_ADMIT_LUA = """
local now = tonumber(ARGV[1])
local cutoff = now - tonumber(ARGV[2])
local known = redis.call('EXISTS', KEYS[4]) == 1
local leaving = {}
local refused = false
for i = 1, 3 do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', cutoff)
  local limit = tonumber(ARGV[4 + i])
  local count = redis.call('ZCARD', KEYS[i])
  if i > 1 and known then
    count = 0
  end
  if count >= limit then
    leaving[i] = redis.call('ZRANGE', KEYS[i], count - limit, count - limit, 'WITHSCORES')[2]
    refused = true
  else
    leaving[i] = ''
  end
end
if not refused then
  for i = 1, 3 do
    redis.call('ZADD', KEYS[i], ARGV[1], ARGV[4])
    redis.call('EXPIRE', KEYS[i], ARGV[3])
  end
end
return leaving
"""


class RedisSignInThrottle:
    """The same rule with attempt times in Redis sorted sets (score = time, one per attempt).

    Times are wall-clock seconds (``time.time``), the one clock all hosts share; the admitting
    script first drops the attempts older than the window, and each set expires a window after
    its last attempt, so an idle pair, account or address leaves nothing behind.
    """

    def __init__(self, store: SharedStore, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock
        self._fallback = SignInThrottle()
        self._admit_script = store.client.register_script(_ADMIT_LUA)

    def _pair_key(self, account: str, client: str) -> str:
        return self._store.key("signin", f"{account}\n{client}")

    def _account_key(self, account: str) -> str:
        return self._store.key("signin-account", account)

    def _address_key(self, client: str) -> str:
        return self._store.key("signin-address", client)

    def _known_key(self, account: str, client: str) -> str:
        return self._store.key("signin-known", f"{account}\n{client}")

    def admit(self, *, email: str, client: str) -> Admission:
        account = normalize_email(email)
        if self._store.available():
            try:
                return self._admit_redis(account, client)
            except redis.RedisError as error:
                self._store.unavailable(error)
        return self._fallback.admit(email=account, client=client)

    def _admit_redis(self, account: str, client: str) -> Admission:
        now = self._clock()
        attempt = f"{now!r}:{secrets.token_hex(8)}"  # unique per attempt
        leaving = self._admit_script(
            keys=[self._pair_key(account, client), self._account_key(account),
                  self._address_key(client), self._known_key(account, client)],
            args=[repr(now), WINDOW_S, int(WINDOW_S) + 1, attempt, MAX_FAILURES,
                  MAX_ACCOUNT_FAILURES, MAX_ADDRESS_FAILURES],
        )
        self._store.answered()
        waits = [_wait_s(float(score), now) for score in leaving if score]
        if waits:
            return Admission(account, client, max(waits))
        return Admission(account, client, 0, attempt)

    def succeeded(self, admission: Admission) -> None:
        self._fallback.succeeded(admission)
        self._give_back(admission, signed_in=True)

    def withdraw(self, admission: Admission) -> None:
        self._fallback.withdraw(admission)
        self._give_back(admission, signed_in=False)

    def _give_back(self, admission: Admission, *, signed_in: bool) -> None:
        if not self._store.available():
            return
        pair = self._pair_key(admission.account, admission.client)
        try:
            with self._store.client.pipeline(transaction=True) as pipe:
                if signed_in:  # clear the pair, and its address is known from now on
                    pipe.delete(pair)
                    pipe.set(self._known_key(admission.account, admission.client), 1,
                             ex=int(KNOWN_ADDRESS_S))
                else:
                    pipe.zrem(pair, admission.attempt)
                pipe.zrem(self._account_key(admission.account), admission.attempt)
                pipe.zrem(self._address_key(admission.client), admission.attempt)
                pipe.execute()
            self._store.answered()
        except redis.RedisError as error:
            self._store.unavailable(error)


def throttle_for(store: SharedStore | None) -> SignInThrottling:
    """Redis when ``SIZER_REDIS_URL`` gave a store, this process otherwise."""
    return SignInThrottle() if store is None else RedisSignInThrottle(store)
