//! AFL++ target: one CGI program's output into flint serve's response-head reader.
fn main() {
    afl::fuzz!(|data: &[u8]| flint_fuzz::cgihead::check(data));
}
