//! What `flint serve` reads whole at start (the config file, the certificate chain, the private
//! key), read within bounds: the path is whatever the command line or the config file names, so
//! it may be a device (`/dev/zero` never ends, `/dev/urandom` neither), a FIFO (an open that
//! waits for a writer), or a file far larger than any such file can be. Only a regular file of at
//! most its limit ([`MAX_CONFIG_BYTES`], [`MAX_PEM_BYTES`]) is read; anything else is one clear
//! line before anything is served.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The largest PEM file read: a certificate is 1 to 2 KiB of PEM (an RSA-4096 one under 3), and
/// rustls sends a chain in one handshake message of at most 64 KiB, so 1 MiB holds hundreds of
/// certificates more than a server can present.
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// The largest config file read: every key with a long value is a few KiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Why a file is not read.
#[derive(Debug, thiserror::Error)]
pub enum StartFileError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("not a regular file")]
    NotRegular,
    #[error("larger than {} KiB, more than such a file can need", .0 >> 10)]
    TooLarge(u64),
}

/// The file's bytes, if it is a regular file of at most `max` bytes.
pub fn read(path: &Path, max: u64) -> Result<Vec<u8>, StartFileError> {
    // O_NONBLOCK: opening a FIFO does not wait for a writer (its type is refused just below).
    let mut file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(StartFileError::NotRegular);
    }
    if meta.len() > max {
        return Err(StartFileError::TooLarge(max));
    }
    // Bounded again while reading: the file may grow between the fstat and the read.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&mut file).take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(StartFileError::TooLarge(max));
    }
    Ok(bytes)
}

/// A passphrase-protected key: PKCS#8 `ENCRYPTED PRIVATE KEY`, or OpenSSL's legacy encrypted
/// PEM (`Proc-Type: 4,ENCRYPTED` inside an `RSA`/`EC PRIVATE KEY` block). rustls reads neither,
/// and would call the first "no key" and the second "malformed".
pub fn is_encrypted_key(pem: &[u8]) -> bool {
    let has = |needle: &[u8]| pem.windows(needle.len()).any(|w| w == needle);
    has(b"-----BEGIN ENCRYPTED PRIVATE KEY-----") || has(b"Proc-Type: 4,ENCRYPTED")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encrypted_keys_are_told_apart() {
        assert!(is_encrypted_key(
            b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n"
        ));
        assert!(is_encrypted_key(
            b"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nMIIB\n-----END RSA PRIVATE KEY-----\n"
        ));
        assert!(!is_encrypted_key(
            b"-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"
        ));
    }
}
