//! The server's stateless tokens. Retry tokens and session ticket keys are made with one key
//! drawn from the kernel's generator when the process makes its first server configuration,
//! shared by every thread's server (a client's Retry token is good on whichever thread its
//! next Initial lands); stateless reset tokens with a key derived from the TLS private key:
//!
//! Every token begins with a byte naming its kind and format ([`RETRY_V1`]): a token without
//! it (another server's, or a format of ours given up) is not ours, and the server takes it
//! as absent (RFC 9000 8.1.3), so the client is not shut out for holding it.
//!
//! - Retry tokens (RFC 9000 8.1.2): the client's address, the connection ID its first Initial
//!   was sent to (the original one, which the handshake must confirm), the ID the Retry
//!   told it to use next, and an expiry, sealed with HMAC-SHA-256. The token carries the
//!   expiry and the original ID in the clear (neither is secret: the client sent the one and
//!   can time the other) and 16 bytes of the MAC; the address and the new ID are in the MAC
//!   only, so a token is good from the address it was given to, for the ID it was given with.
//! - Stateless reset tokens (RFC 9000 10.3): HMAC of the thread holding a connection and its
//!   ID under a key of their own ([`ResetKey`]), derived with HKDF from the server's TLS
//!   private key and the address it is bound to rather than drawn at start, so a thread
//!   that no longer knows a connection (restarted, its state dropped, in this process or a
//!   new one) can still end it, and another server on that TLS key cannot ([`ResetSource`]). Only that thread answers with it (the ID names the thread, see `cid`):
//!   another thread sharing the key would hand a live connection's token to whoever sent a
//!   packet with its ID from another address (RFC 9000 21.11).

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::net::{IpAddr, SocketAddr};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The first byte of a Retry token of this format.
const RETRY_V1: u8 = 0xf1;

/// MAC bytes kept in a Retry token (128 bits: forging one takes 2^128 tries).
const MAC_LEN: usize = 16;
/// The longest connection ID QUIC v1 allows (RFC 9000 17.2).
const MAX_CID: usize = 20;

/// The keyed MACs, one a kind of token (the key set up and the kind's name taken in once:
/// each use clones one), and the instant expiries count from.
struct Key {
    /// What each period's session ticket key is derived from (`tickets.rs`).
    tickets: Hmac<Sha256>,
    retry: Hmac<Sha256>,
    epoch: Instant,
}

/// The label the stateless reset key is derived with (HKDF's info): a key for this use only.
const RESET_LABEL: &[u8] = b"flint h3 stateless reset v1";

/// Where a server's stateless reset key comes from.
#[derive(Clone)]
pub(crate) enum ResetSource {
    /// The TLS private key (HKDF's pseudorandom key extracted from it, the key itself not
    /// kept) and the machine's host name: each server's key is expanded with the address and
    /// port it is bound to and the host name ([`ResetSource::key_at`]), so servers sharing a
    /// certificate's key (a second port, a fleet on one wildcard certificate, each bound to
    /// the wildcard address on its own host) make unrelated tokens, and a connection ID seen
    /// on one cannot be sent to another for its token (RFC 9000 10.3.2, 21.11); a server
    /// restarted on the same address and host makes the same ones.
    TlsKey { prk: [u8; 32], host: Box<[u8]> },
    /// A secret given for this use: the same key wherever it is given, on purpose (a fleet
    /// that routes by connection ID, whose any server may end another's connection).
    Secret(ResetKey),
}

impl ResetSource {
    /// The source of a server whose TLS private key's DER encoding is `der`, on the host
    /// named `host`.
    pub(crate) fn tls_key(der: &[u8], host: &[u8]) -> ResetSource {
        ResetSource::TlsKey {
            prk: extract(der),
            host: host.into(),
        }
    }

    /// The key of a server bound at `local`.
    pub(crate) fn key_at(&self, local: SocketAddr) -> ResetKey {
        match self {
            ResetSource::TlsKey { prk, host } => {
                // The address is of fixed length: the host name after it is told apart.
                let mut context = address(local).to_vec();
                context.extend_from_slice(host);
                ResetKey::expand(prk, &context)
            }
            ResetSource::Secret(key) => key.clone(),
        }
    }
}

/// HKDF-SHA-256's extract step (RFC 5869) with a fixed salt.
fn extract(secret: &[u8]) -> [u8; 32] {
    let mut m =
        <Hmac<Sha256> as KeyInit>::new_from_slice(b"flint h3 hkdf salt").expect("any key length");
    m.update(secret);
    m.finalize().into_bytes().into()
}

/// The key of a server's stateless reset tokens, the keyed MAC of its label: derived from
/// secret bytes that outlive the process (the TLS private key, or a secret given), so a
/// restarted server makes the same token for a connection ID as the server that issued it,
/// and its reset ends the client's side at once (RFC 9000 10.3).
#[derive(Clone)]
pub(crate) struct ResetKey(Hmac<Sha256>);

impl ResetKey {
    /// The key derived from `secret` with HKDF-SHA-256 (RFC 5869: extract with a fixed salt,
    /// expand one block with [`RESET_LABEL`]): one-way, so tokens seen on the wire tell
    /// nothing of the secret; another label would give an unrelated key.
    pub(crate) fn derive(secret: &[u8]) -> ResetKey {
        ResetKey::expand(&extract(secret), &[])
    }

    /// HKDF's expand step, one block, with [`RESET_LABEL`] and `context` as its info (the
    /// label is of fixed length, so the context cannot be confused with it).
    fn expand(prk: &[u8; 32], context: &[u8]) -> ResetKey {
        let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(prk).expect("any key length");
        m.update(RESET_LABEL);
        m.update(context);
        m.update(&[1]);
        let okm = m.finalize().into_bytes();
        ResetKey(<Hmac<Sha256> as KeyInit>::new_from_slice(&okm).expect("any key length"))
    }

    /// The stateless reset token of connection ID `cid`, held by thread `thread`.
    pub(crate) fn token(&self, thread: u16, cid: &[u8]) -> u128 {
        let mut m = self.0.clone();
        m.update(&thread.to_be_bytes());
        m.update(cid);
        let tag = m.finalize().into_bytes();
        u128::from_be_bytes(tag[..16].try_into().expect("32 bytes"))
    }
}

fn key() -> &'static Key {
    static KEY: OnceLock<Key> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut key = [0u8; 32];
        crate::cid::fill(&mut key);
        let keyed = |domain: &[u8]| {
            let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(&key).expect("any key length");
            m.update(domain);
            m
        };
        Key {
            tickets: keyed(b"flint h3 tickets"),
            retry: keyed(b"flint h3 retry"),
            epoch: Instant::now(),
        }
    })
}

/// The session ticket key of rotation period `epoch` of periods `period_ms` long
/// (`tickets.rs`; the length taken in too, so that servers of one process with different
/// periods share no key), the same on every thread: derived from the process's secret, so a restarted server opens no old ticket (the
/// client does a full handshake). A resumed TLS 1.3 handshake is PSK with a fresh (EC)DHE
/// exchange, so whoever learns a period's key cannot decrypt recorded traffic; they can open
/// the resumption secrets of that period's tickets, good for two periods at most.
pub(crate) fn ticket_key(period_ms: u64, epoch: u64) -> TicketKey {
    let part = |n: u8| {
        let mut m = key().tickets.clone();
        m.update(&period_ms.to_be_bytes());
        m.update(&epoch.to_be_bytes());
        m.update(&[n]);
        <[u8; 32]>::from(m.finalize().into_bytes())
    };
    let (first, hmac) = (part(0), part(1));
    let mut name = [0u8; 16];
    let mut aes = [0u8; 16];
    name.copy_from_slice(&first[..16]);
    aes.copy_from_slice(&first[16..]);
    TicketKey { name, aes, hmac }
}

/// One period's session ticket key (`tickets.rs` hands it to BoringSSL): its name (in every
/// ticket it seals), its AES and HMAC keys.
pub(crate) struct TicketKey {
    pub name: [u8; 16],
    pub aes: [u8; 16],
    pub hmac: [u8; 32],
}

/// Time since the process drew its secret: ticket key periods count from it (each server's
/// clock adds its own offset, `tickets.rs`'s `TicketClock`).
pub(crate) fn since_start() -> Duration {
    key().epoch.elapsed()
}

/// Draws the key now (at start) rather than at the first Initial.
pub(crate) fn init() {
    key();
}

/// The address as 16 bytes and a port, IPv4 mapped (as a dual-stack socket sees it).
fn address(peer: SocketAddr) -> [u8; 18] {
    let ip = match peer.ip() {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    };
    let mut out = [0u8; 18];
    out[..16].copy_from_slice(&ip.octets());
    out[16..].copy_from_slice(&peer.port().to_be_bytes());
    out
}

fn retry_mac(peer: SocketAddr, expiry: [u8; 8], odcid: &[u8], new_cid: &[u8]) -> Hmac<Sha256> {
    let mut m = key().retry.clone();
    m.update(&address(peer));
    m.update(&expiry);
    m.update(&[odcid.len() as u8]);
    m.update(odcid);
    m.update(new_cid);
    m
}

/// A Retry token for `peer`, whose first Initial went to `odcid`, told to use `new_cid`, good
/// until `now + lifetime`.
pub(crate) fn seal(
    peer: SocketAddr,
    odcid: &[u8],
    new_cid: &[u8],
    now: Instant,
    lifetime: Duration,
) -> Vec<u8> {
    let expiry = (now + lifetime)
        .saturating_duration_since(key().epoch)
        .as_millis() as u64;
    let expiry = expiry.to_be_bytes();
    let odcid = &odcid[..odcid.len().min(MAX_CID)];
    let tag = retry_mac(peer, expiry, odcid, new_cid)
        .finalize()
        .into_bytes();
    let mut token = Vec::with_capacity(1 + 8 + 1 + odcid.len() + MAC_LEN);
    token.push(RETRY_V1);
    token.extend_from_slice(&expiry);
    token.push(odcid.len() as u8);
    token.extend_from_slice(odcid);
    token.extend_from_slice(&tag[..MAC_LEN]);
    token
}

/// Whether `token` is of a format of ours (else it is taken as no token).
pub(crate) fn ours(token: &[u8]) -> bool {
    token.first() == Some(&RETRY_V1)
}

/// The original connection ID a Retry token names, if the token is ours, for `peer` and
/// `new_cid` (the ID the client's Initial is sent to), and not expired at `now`.
pub(crate) fn open<'t>(
    token: &'t [u8],
    peer: SocketAddr,
    new_cid: &[u8],
    now: Instant,
) -> Option<&'t [u8]> {
    let (&RETRY_V1, token) = token.split_first()? else {
        return None;
    };
    let (expiry, rest) = token.split_first_chunk::<8>()?;
    let (&len, rest) = rest.split_first()?;
    let len = len as usize;
    if len > MAX_CID || rest.len() != len + MAC_LEN {
        return None;
    }
    let (odcid, tag) = rest.split_at(len);
    // Compared in constant time (the MAC's own check).
    retry_mac(peer, *expiry, odcid, new_cid)
        .verify_truncated_left(tag)
        .ok()?;
    let now = now.saturating_duration_since(key().epoch).as_millis() as u64;
    (now < u64::from_be_bytes(*expiry)).then_some(odcid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_token_opens_only_for_its_address_ids_and_time() {
        let peer: SocketAddr = "192.0.2.7:4000".parse().unwrap();
        let now = Instant::now();
        let life = Duration::from_secs(10);
        let token = seal(peer, b"original", b"new-id", now, life);
        assert_eq!(open(&token, peer, b"new-id", now), Some(&b"original"[..]));
        // Another port, another address, another new ID.
        assert_eq!(
            open(&token, "192.0.2.7:4001".parse().unwrap(), b"new-id", now),
            None
        );
        assert_eq!(
            open(&token, "192.0.2.8:4000".parse().unwrap(), b"new-id", now),
            None
        );
        assert_eq!(open(&token, peer, b"other", now), None);
        // Expired.
        assert_eq!(open(&token, peer, b"new-id", now + life), None);
        // Any byte changed, or cut short, or lengthened.
        for i in 0..token.len() {
            let mut t = token.clone();
            t[i] ^= 1;
            assert_eq!(open(&t, peer, b"new-id", now), None, "byte {i}");
        }
        assert_eq!(open(&token[..token.len() - 1], peer, b"new-id", now), None);
        let mut long = token.clone();
        long.push(0);
        assert_eq!(open(&long, peer, b"new-id", now), None);
        assert_eq!(open(&[], peer, b"new-id", now), None);
        assert!(ours(&token) && !ours(&token[1..]) && !ours(&[]));
    }

    #[test]
    fn reset_tokens_are_per_id_and_thread_and_stable_for_a_secret() {
        let key = ResetKey::derive(b"secret");
        let reset = |thread, cid| key.token(thread, cid);
        assert_eq!(reset(0, b"abc"), reset(0, b"abc"));
        assert_ne!(reset(0, b"abc"), reset(0, b"abd"));
        assert_ne!(reset(0, b"abc"), reset(1, b"abc"));
        // The same secret later (a restart): the same token; another secret: another.
        assert_eq!(
            ResetKey::derive(b"secret").token(0, b"abc"),
            reset(0, b"abc")
        );
        assert_ne!(
            ResetKey::derive(b"secreT").token(0, b"abc"),
            reset(0, b"abc")
        );
    }

    #[test]
    fn a_tls_keys_reset_tokens_differ_by_the_address_bound_and_the_host() {
        let source = ResetSource::tls_key(b"der", b"host-a");
        let at = |s: &str| source.key_at(s.parse().unwrap()).token(0, b"id");
        // Another host on the same address (a fleet, each bound to the wildcard).
        let other_host = ResetSource::tls_key(b"der", b"host-b");
        let wildcard = "0.0.0.0:443".parse().unwrap();
        assert_ne!(
            at("0.0.0.0:443"),
            other_host.key_at(wildcard).token(0, b"id")
        );
        assert_eq!(at("192.0.2.1:443"), at("192.0.2.1:443"));
        assert_ne!(at("192.0.2.1:443"), at("192.0.2.1:8443"));
        assert_ne!(at("192.0.2.1:443"), at("192.0.2.2:443"));
        assert_ne!(at("192.0.2.1:443"), at("[::]:443"));
        // Not the key of the same bytes given as a secret (that one has no address).
        assert_ne!(
            at("192.0.2.1:443"),
            ResetKey::derive(b"der").token(0, b"id")
        );
        // A secret given: one key at every address.
        let given = ResetSource::Secret(ResetKey::derive(b"der"));
        let a = given
            .key_at("192.0.2.1:443".parse().unwrap())
            .token(0, b"id");
        let b = given
            .key_at("192.0.2.2:8443".parse().unwrap())
            .token(0, b"id");
        assert_eq!(a, b);
    }

    #[test]
    fn the_reset_key_is_hkdf_sha256_of_the_secret() {
        // RFC 5869's construction, one block, computed here step by step.
        let hmac = |key: &[u8], data: &[u8]| {
            let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap();
            m.update(data);
            m.finalize().into_bytes()
        };
        let prk = hmac(b"flint h3 hkdf salt", b"secret");
        let okm = hmac(&prk, b"flint h3 stateless reset v1\x01");
        let tag = hmac(&okm, &[0, 7, b'i', b'd']);
        let want = u128::from_be_bytes(tag[..16].try_into().unwrap());
        assert_eq!(ResetKey::derive(b"secret").token(7, b"id"), want);
    }
}
