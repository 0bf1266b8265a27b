//! The ETag of a file version: 64 bits mixed from (dev, ino, size, mtime in ns), written as 11
//! base64url characters in quotes (13 bytes).
//!
//! Short because HTTP/2 pays for its length on every response: nghttp2 never indexes `etag` in
//! HPACK, so it Huffman-codes the value each time (~27 instructions a byte); HTTP/1.1 sends it
//! in every head. The mix is fixed (no keyed or per-process hasher), so a tag survives a
//! restart of the server and is the same on every thread. Each step is `x ^ input` through a
//! bijection (MurmurHash3's 64-bit finaliser), so a version that differs from another in any
//! one of the four always gets another tag; versions differing in several collide with
//! probability 2^-64. A precompressed sibling is its own file (its own inode), so its tag
//! differs from the plain file's.

use super::FileVersion;

/// Bytes of a tag, quotes included.
pub const LEN: usize = 13;

/// The strong ETag of `version`, quoted.
pub fn of(version: &FileVersion) -> [u8; LEN] {
    let mtime_ns =
        (i128::from(version.mtime) * 1_000_000_000 + i128::from(version.mtime_nsec)) as u64;
    let mut h = mix(version.dev ^ 0x9e37_79b9_7f4a_7c15);
    for input in [version.ino, version.size, mtime_ns] {
        h = mix(h ^ input);
    }
    quoted_base64url(h)
}

/// MurmurHash3's 64-bit finaliser: a bijection on u64 whose every output bit depends on every
/// input bit.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `"` + 64 bits as 11 base64url characters, the most significant 6 first + `"`.
fn quoted_base64url(h: u64) -> [u8; LEN] {
    let mut out = [b'"'; LEN];
    for (i, c) in out[1..LEN - 1].iter_mut().enumerate() {
        // 11 digits of 6 bits hold 66: the first digit carries the top 4 bits.
        *c = ALPHABET[((h >> (60 - 6 * i)) & 63) as usize];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version() -> FileVersion {
        FileVersion {
            dev: 2049,
            ino: 1_234_567,
            size: 1024,
            mtime: 1_764_000_000,
            mtime_nsec: 123_456_789,
        }
    }

    #[test]
    fn a_tag_is_quoted_base64url() {
        let tag = of(&version());
        assert_eq!(tag.len(), 13);
        assert_eq!((tag[0], tag[12]), (b'"', b'"'));
        assert!(tag[1..12].iter().all(|c| ALPHABET.contains(c)));
    }

    #[test]
    fn the_tag_is_a_fixed_function_of_the_version() {
        // Pinned (computed apart, in Python): a change of the mix would change every tag clients
        // hold, as a restart must not.
        assert_eq!(&of(&version()), b"\"MULwhwXgS7G\"");
        assert_eq!(of(&version()), of(&version()));
    }

    #[test]
    fn the_digits_are_the_bits_most_significant_first() {
        assert_eq!(&quoted_base64url(0), b"\"AAAAAAAAAAA\"");
        assert_eq!(&quoted_base64url(u64::MAX), b"\"P__________\"");
        assert_eq!(&quoted_base64url(1), b"\"AAAAAAAAAAB\"");
        assert_eq!(&quoted_base64url(1 << 63), b"\"IAAAAAAAAAA\"");
    }

    #[test]
    fn any_one_field_changed_changes_the_tag() {
        let base = of(&version());
        let changes: [fn(&mut FileVersion); 6] = [
            |v| v.dev += 1,
            |v| v.ino += 1,
            |v| v.size += 1,
            |v| v.mtime += 1,
            |v| v.mtime_nsec += 1,
            |v| v.ino ^= 1 << 63,
        ];
        for change in changes {
            let mut v = version();
            change(&mut v);
            assert_ne!(of(&v), base, "{v:?}");
        }
    }

    #[test]
    fn no_two_of_many_nearby_versions_share_a_tag() {
        let mut seen = std::collections::HashSet::new();
        for ino in 0..40u64 {
            for size in 0..40u64 {
                for mtime_nsec in 0..40i64 {
                    let v = FileVersion {
                        ino,
                        size,
                        mtime_nsec,
                        ..version()
                    };
                    assert!(seen.insert(of(&v)), "{v:?}");
                }
            }
        }
    }
}
