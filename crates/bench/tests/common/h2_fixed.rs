//! An HTTP/2 server for the allocation tests that allocates nothing per request: fixed buffers,
//! a response prebuilt (`:status: 200` and 100 bytes of `x`), every request without a body
//! answered.

use crate::per_connection::read_until_stopped;
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::AtomicBool;

/// HEADERS (`:status: 200`, HPACK static index 8) and DATA of 100 bytes with END_STREAM, for
/// stream id bytes written in at `[5..9]` and `[15..19]`.
fn response() -> [u8; 19 + 100] {
    let mut r = [b'x'; 119];
    r[..10].copy_from_slice(&[0, 0, 1, 1, 4, 0, 0, 0, 0, 0x88]);
    r[10..19].copy_from_slice(&[0, 0, 100, 0, 1, 0, 0, 0, 0]);
    r
}

/// One connection: the preface, then frames; SETTINGS acknowledged, each request (a HEADERS
/// with END_STREAM) answered. Fixed buffers; a frame header may straddle reads.
pub fn serve(mut s: TcpStream, stop: &AtomicBool) {
    let _ = s.set_nodelay(true);
    // Our SETTINGS (none) and the ACK of the client's, ahead of time.
    let _ = s.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    let mut out = [0u8; 16384];
    let mut head = [0u8; 9];
    let (mut have, mut skip, mut preface) = (0usize, 0usize, 24usize);
    let mut resp = response();
    read_until_stopped(&mut s, stop, &mut [0u8; 16384], |s, data| {
        let mut olen = 0;
        let mut i = 0;
        while i < data.len() {
            if preface > 0 {
                let k = preface.min(data.len() - i);
                (preface, i) = (preface - k, i + k);
            } else if skip > 0 {
                let k = skip.min(data.len() - i);
                (skip, i) = (skip - k, i + k);
            } else {
                head[have] = data[i];
                (have, i) = (have + 1, i + 1);
                if have < 9 {
                    continue;
                }
                have = 0;
                skip = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
                let (ty, flags) = (head[3], head[4]);
                if ty == 4 && flags & 1 == 0 {
                    out[olen..olen + 9].copy_from_slice(&[0, 0, 0, 4, 1, 0, 0, 0, 0]);
                    olen += 9;
                } else if ty == 1 && flags & 1 != 0 {
                    resp[5..9].copy_from_slice(&head[5..9]);
                    resp[15..19].copy_from_slice(&head[5..9]);
                    if olen + resp.len() > out.len() {
                        let _ = s.write_all(&out[..olen]);
                        olen = 0;
                    }
                    out[olen..olen + resp.len()].copy_from_slice(&resp);
                    olen += resp.len();
                }
            }
        }
        olen == 0 || s.write_all(&out[..olen]).is_ok()
    });
}
