//! Content-MD5 and Repr-Digest sha-256, computed once per file version.
//!
//! 004 measured Apache computing Content-MD5 on every request and losing five-fold to a server
//! that cached it; IO-Lite cached its TCP checksums for the same reason. Here the digests are
//! computed when a file version enters the cache (both hashes in one pass over the bytes) and
//! stored as the base64 text that goes into the header block, so a request only copies them.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use base64::Engine as _;
use md5::{Digest as _, Md5};
use sha2::Sha256;

/// Both digests of one representation, as base64 text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digests {
    md5: [u8; 24],
    sha256: [u8; 44],
}

impl Digests {
    /// `Content-MD5` value (RFC 1864): base64 of the MD5 of the bytes.
    pub fn md5_base64(&self) -> &[u8] {
        &self.md5
    }

    /// base64 of the SHA-256, as it goes between the colons of `Repr-Digest: sha-256=:...:`.
    pub fn sha256_base64(&self) -> &[u8] {
        &self.sha256
    }

    /// The digests of bytes in memory.
    pub fn of_bytes(data: &[u8]) -> Digests {
        let mut h = Hashers::default();
        h.update(data);
        h.finish()
    }

    /// The digests of the first `len` bytes of a file, read in 64 KiB pieces with `pread` (the
    /// descriptor's offset is left alone, so the same file can then go by `sendfile`).
    pub fn of_file(file: &File, len: u64) -> io::Result<Digests> {
        let mut h = Hashers::default();
        let mut buf = vec![0u8; 64 << 10];
        let mut offset = 0u64;
        while offset < len {
            let want = (len - offset).min(buf.len() as u64) as usize;
            let n = file.read_at(&mut buf[..want], offset)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file shrank while being digested",
                ));
            }
            h.update(&buf[..n]);
            offset += n as u64;
        }
        Ok(h.finish())
    }
}

#[derive(Default)]
struct Hashers {
    md5: Md5,
    sha256: Sha256,
}

impl Hashers {
    fn update(&mut self, data: &[u8]) {
        self.md5.update(data);
        self.sha256.update(data);
    }

    fn finish(self) -> Digests {
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut d = Digests {
            md5: [0; 24],
            sha256: [0; 44],
        };
        // The lengths are exact: 16 bytes -> 24 base64 characters, 32 -> 44.
        let n = b64
            .encode_slice(self.md5.finalize(), &mut d.md5)
            .expect("24 bytes hold base64 of 16");
        debug_assert_eq!(n, 24);
        let n = b64
            .encode_slice(self.sha256.finalize(), &mut d.sha256)
            .expect("44 bytes hold base64 of 32");
        debug_assert_eq!(n, 44);
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn md5_of_hello_matches_the_known_value() {
        let d = Digests::of_bytes(b"hello");
        assert_eq!(d.md5_base64(), b"XUFAKrxLKna5cZ2REBfFkg==");
        assert_eq!(
            d.sha256_base64(),
            b"LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="
        );
    }

    #[test]
    fn file_digest_equals_memory_digest_across_read_pieces() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&data).unwrap();
        assert_eq!(
            Digests::of_file(&f, data.len() as u64).unwrap(),
            Digests::of_bytes(&data)
        );
        assert!(Digests::of_file(&f, data.len() as u64 + 1).is_err());
    }
}
