//! Session tickets over TCP: rustls's [`ProducesTickets`] with a key a period
//! (`tls_ticket_key_period_ms`), so that a ticket resumes in the period it was issued in and
//! the next only, however long the server was idle. (rustls's `TicketRotator` rolls only when
//! a ticket is made or opened, and once however many periods passed: a ticket issued before a
//! quiet stretch would still resume after it.)
//!
//! Periods are counted on a monotonic clock from the process's start, as the QUIC side does:
//! a step of the wall clock neither keeps a key past its period (a step back) nor pins one for
//! as long as the step (a step forward). Should the count ever go back, the keys roll all the
//! same and the one before is dropped.
//!
//! A ticket is its period's number, a nonce and the session state sealed with AES-256-GCM
//! under that period's key (random, drawn when the period is first used), the number
//! authenticated with it: a ticket is opened only if its number is the current period or the
//! one before, and only with that period's key. The nonce counts the key's tickets (unique
//! under the key however many a period makes; random 96-bit nonces would bound a key to about
//! 2^32 tickets, NIST SP 800-38D 8.3). Each roll looks at the clock: after two periods or more
//! without a handshake both keys are gone. Keys live in memory only, per server (one rustls
//! configuration), like rustls's own; the lock is held only to read or roll them, the sealing
//! and opening are done outside it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use rustls::server::ProducesTickets;
use zeroize::Zeroizing;

/// The longest period accepted, seconds: a ticket lives two, and RFC 8446 4.6.1 caps a ticket's
/// lifetime at 7 days (604,800 s).
pub(crate) const MAX_PERIOD_SECS: u64 = 302_400;

/// Bytes before the sealed state: the period's number and the nonce.
const PREFIX: usize = 8 + NONCE_LEN;

/// Seconds on the periods' clock.
type Clock = fn() -> u64;

/// Seconds since the process's first use of the clock (monotonic).
fn process_clock() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs()
}

/// The keys of the current period and the one before.
struct Keys {
    /// The current period's number (the clock's seconds / period).
    period: u64,
    current: Arc<LessSafeKey>,
    previous: Option<Arc<LessSafeKey>>,
    /// Tickets sealed under `current`: the next one's nonce.
    sealed: AtomicU64,
}

/// A ticketer whose key changes every period (see the module's notes).
pub(crate) struct PeriodTicketer {
    /// Seconds, 1 to [`MAX_PERIOD_SECS`].
    period_secs: u64,
    clock: Clock,
    keys: Mutex<Arc<Keys>>,
    random: SystemRandom,
}

impl std::fmt::Debug for PeriodTicketer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeriodTicketer")
            .field("period_secs", &self.period_secs)
            .finish()
    }
}

impl PeriodTicketer {
    pub fn new(period_secs: u64) -> Result<PeriodTicketer, rustls::Error> {
        PeriodTicketer::with_clock(period_secs, process_clock)
    }

    /// With `clock` for the seconds (the tests' own).
    fn with_clock(period_secs: u64, clock: Clock) -> Result<PeriodTicketer, rustls::Error> {
        let period_secs = period_secs.clamp(1, MAX_PERIOD_SECS);
        let random = SystemRandom::new();
        let keys = Keys {
            period: clock() / period_secs,
            current: new_key(&random)?,
            previous: None,
            sealed: AtomicU64::new(0),
        };
        Ok(PeriodTicketer {
            period_secs,
            clock,
            keys: Mutex::new(Arc::new(keys)),
            random,
        })
    }

    /// The keys, rolled to the clock's period first (on any change of the period's number:
    /// the one before kept only if it is the period just before).
    fn keys(&self) -> Option<Arc<Keys>> {
        let now = (self.clock)() / self.period_secs;
        let mut keys = self.keys.lock().ok()?;
        if now != keys.period {
            let previous = (now == keys.period.wrapping_add(1)).then(|| Arc::clone(&keys.current));
            *keys = Arc::new(Keys {
                period: now,
                current: new_key(&self.random).ok()?,
                previous,
                sealed: AtomicU64::new(0),
            });
        }
        Some(Arc::clone(&keys))
    }
}

fn new_key(random: &SystemRandom) -> Result<Arc<LessSafeKey>, rustls::Error> {
    let mut bytes = Zeroizing::new([0u8; 32]);
    random
        .fill(&mut bytes[..])
        .map_err(|_| rustls::Error::FailedToGetRandomBytes)?;
    let key = UnboundKey::new(&AES_256_GCM, &bytes[..]).map_err(|_| rustls::Error::EncryptError)?;
    Ok(Arc::new(LessSafeKey::new(key)))
}

impl ProducesTickets for PeriodTicketer {
    fn enabled(&self) -> bool {
        true
    }

    /// Two periods: a ticket issued at its period's start is good to the next one's end.
    fn lifetime(&self) -> u32 {
        u32::try_from(2 * self.period_secs).unwrap_or(u32::MAX)
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let keys = self.keys()?;
        let mut out = Vec::with_capacity(PREFIX + plain.len() + AES_256_GCM.tag_len());
        out.extend_from_slice(&keys.period.to_be_bytes());
        // The key's count of tickets: never twice under one key.
        let mut nonce = [0u8; NONCE_LEN];
        let count = keys.sealed.fetch_add(1, Ordering::Relaxed);
        nonce[NONCE_LEN - 8..].copy_from_slice(&count.to_be_bytes());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plain);
        let (head, body) = out.split_at_mut(PREFIX);
        let tag = keys
            .current
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&head[..8]),
                body,
            )
            .ok()?;
        out.extend_from_slice(tag.as_ref());
        Some(out)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        if cipher.len() < PREFIX + AES_256_GCM.tag_len() {
            return None;
        }
        let (head, sealed) = cipher.split_at(PREFIX);
        let issued = u64::from_be_bytes(head[..8].try_into().ok()?);
        let nonce = Nonce::try_assume_unique_for_key(&head[8..]).ok()?;
        let keys = self.keys()?;
        let key = if issued == keys.period {
            &keys.current
        } else if issued.checked_add(1) == Some(keys.period) {
            keys.previous.as_ref()?
        } else {
            return None;
        };
        let mut plain = sealed.to_vec();
        let n = key
            .open_in_place(nonce, Aad::from(&head[..8]), &mut plain)
            .ok()?
            .len();
        plain.truncate(n);
        Some(plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    static NOW: AtomicU64 = AtomicU64::new(1_000);

    fn test_clock() -> u64 {
        NOW.load(Ordering::SeqCst)
    }

    #[test]
    fn a_ticket_opens_in_its_period_and_the_next_only_however_idle_between() {
        let t = PeriodTicketer::with_clock(10, test_clock).unwrap();
        assert_eq!(t.lifetime(), 20);
        let a = t.encrypt(b"state of a").unwrap();
        assert_eq!(t.decrypt(&a).as_deref(), Some(&b"state of a"[..]));
        // The next period: still opens (one roll).
        NOW.store(1_015, Ordering::SeqCst);
        assert_eq!(t.decrypt(&a).as_deref(), Some(&b"state of a"[..]));
        let b = t.encrypt(b"state of b").unwrap();
        // Two periods on with nothing in between: a is refused, b (one period old) opens.
        NOW.store(1_025, Ordering::SeqCst);
        assert_eq!(t.decrypt(&a), None);
        assert_eq!(t.decrypt(&b).as_deref(), Some(&b"state of b"[..]));
        // An idle stretch of many periods, then one handshake: b is refused.
        NOW.store(1_100, Ordering::SeqCst);
        assert_eq!(t.decrypt(&b), None);
        // A ticket whose period number was changed does not open (it is authenticated).
        let mut c = t.encrypt(b"state of c").unwrap();
        assert!(t.decrypt(&c).is_some());
        c[7] ^= 1;
        assert_eq!(t.decrypt(&c), None);
        assert_eq!(t.decrypt(&[0; 10]), None);
    }

    static SHIFTED: AtomicU64 = AtomicU64::new(1_000);

    fn shifted_clock() -> u64 {
        SHIFTED.load(Ordering::SeqCst)
    }

    #[test]
    fn a_clock_that_goes_back_or_jumps_keeps_no_key_past_its_period() {
        let t = PeriodTicketer::with_clock(10, shifted_clock).unwrap();
        let a = t.encrypt(b"state of a").unwrap();
        // Back a few periods: a new key, and the one before dropped (not the period before).
        SHIFTED.store(950, Ordering::SeqCst);
        assert_eq!(t.decrypt(&a), None);
        // Far ahead, then back: the key follows the clock, not the furthest it went.
        SHIFTED.store(1_000_000_000_000, Ordering::SeqCst);
        let far = t.encrypt(b"far").unwrap();
        SHIFTED.store(1_030, Ordering::SeqCst);
        assert_eq!(t.decrypt(&far), None);
        let c = t.encrypt(b"state of c").unwrap();
        assert_eq!(t.decrypt(&c).as_deref(), Some(&b"state of c"[..]));
        SHIFTED.store(1_050, Ordering::SeqCst);
        assert_eq!(t.decrypt(&c), None, "two periods on");
    }

    #[test]
    fn nonces_count_the_keys_tickets() {
        let t = PeriodTicketer::with_clock(3_600, || 7).unwrap();
        let nonces: Vec<Vec<u8>> = (0..3)
            .map(|_| t.encrypt(b"s").unwrap()[8..PREFIX].to_vec())
            .collect();
        for (k, n) in nonces.iter().enumerate() {
            let mut want = [0u8; NONCE_LEN];
            want[NONCE_LEN - 8..].copy_from_slice(&(k as u64).to_be_bytes());
            assert_eq!(n[..], want[..]);
        }
    }

    #[test]
    fn the_period_is_held_to_what_a_ticket_lifetime_may_be() {
        let t = PeriodTicketer::new(u64::MAX).unwrap();
        assert_eq!(u64::from(t.lifetime()), 604_800);
    }
}
