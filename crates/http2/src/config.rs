//! A session's limits: the SETTINGS it advertises and the nghttp2 options that bound what a
//! peer can make it do.

use libnghttp2_sys as sys;

/// The limits of one session. Every field is applied through `nghttp2_option_*` or the initial
/// SETTINGS (`nghttp2_settings_entry`); the defaults are safe for a server facing the Internet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// SETTINGS_MAX_CONCURRENT_STREAMS: streams the peer may open at once (100).
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: each stream's receive window (65,535, RFC 9113's default;
    /// the client's 6 MiB, as Chrome). nghttp2 sends WINDOW_UPDATE itself once half of a window
    /// has been received.
    pub initial_window_size: u32,
    /// The connection's receive window, raised from 65,535 by a WINDOW_UPDATE on stream 0 right
    /// after the initial SETTINGS (65,535; the client's 15 MiB, as Chrome).
    pub connection_window_size: u32,
    /// SETTINGS_MAX_FRAME_SIZE: the largest frame payload the peer may send (16,384).
    pub max_frame_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE: the HPACK table the peer's encoder may use (4,096).
    pub header_table_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: the largest header list (names, values, 32 bytes each)
    /// the peer may send (65,536). Advertised, and enforced on receipt by this crate as fields
    /// are decoded. Past it, a server's request is refused, not the connection: the handler
    /// hears no more of its fields and is told (`Handler::on_header_list_too_large`), to answer
    /// it (431); a client's stream is reset (RST_STREAM INTERNAL_ERROR), its siblings go on.
    pub max_header_list_size: u32,
    /// The most of one header list a server decodes (same count) before it ends the connection
    /// (GOAWAY ENHANCE_YOUR_CALM): past `max_header_list_size` the rest of a block is still
    /// decoded (HPACK's dynamic table must follow the peer's), and this bounds what a block of
    /// references to one large table entry (an HPACK bomb) costs (262,144; never below
    /// `max_header_list_size`).
    pub max_header_list_decoded: u32,
    /// The HPACK table our encoder uses at most, whatever the peer allows (4,096).
    pub deflate_table_size: usize,
    /// CONTINUATION frames allowed after one HEADERS (8, nghttp2's default): the CONTINUATION
    /// flood mitigation (CVE-2024-27316), `nghttp2_option_set_max_continuations`.
    pub max_continuations: usize,
    /// Streams the peer may reset, a token bucket: `burst` at once, then `rate` a second
    /// (1000, 33): the rapid-reset mitigation (CVE-2023-44487),
    /// `nghttp2_option_set_stream_reset_rate_limit`. A server past it sends GOAWAY.
    pub stream_reset_burst: u64,
    /// Resets a second that refill the bucket of `stream_reset_burst` (33).
    pub stream_reset_rate: u64,
    /// Frames that do the peer no good (empty DATA, needless WINDOW_UPDATE and the like), a
    /// token bucket (1000, 33): `nghttp2_option_set_glitch_rate_limit`. Past it the session ends
    /// with GOAWAY ENHANCE_YOUR_CALM.
    pub glitch_burst: u64,
    /// Glitches a second that refill the bucket of `glitch_burst` (33).
    pub glitch_rate: u64,
    /// Acknowledgements (SETTINGS and PING ACK) queued and not yet written (1000):
    /// `nghttp2_option_set_max_outbound_ack`, against PING and SETTINGS floods. Past it `recv`
    /// fails (fatal, `lib_error::FLOODED`).
    pub max_outbound_ack: usize,
    /// Entries allowed in one received SETTINGS frame (32): `nghttp2_option_set_max_settings`.
    pub max_settings: usize,
    /// A stream's receive window reopens only as the caller says its body bytes were taken
    /// (`Handler::on_data_paced` as they arrive, `Session::consume` later), so a stream whose
    /// consumer stops holds no more than its window (false: nghttp2 reopens it itself). The
    /// connection's window reopens as bytes arrive either way: a stream that stops holds back
    /// no other.
    pub paced_stream_windows: bool,
}

impl Default for Config {
    /// [`Config::server`].
    fn default() -> Config {
        Config::server()
    }
}

/// RFC 9113's initial window, before any SETTINGS or WINDOW_UPDATE.
pub const DEFAULT_WINDOW: u32 = 65_535;

impl Config {
    /// A server's limits: RFC 9113's windows (requests are small), 100 streams.
    pub fn server() -> Config {
        Config {
            max_concurrent_streams: 100,
            initial_window_size: DEFAULT_WINDOW,
            connection_window_size: DEFAULT_WINDOW,
            max_frame_size: 16_384,
            header_table_size: 4_096,
            max_header_list_size: 65_536,
            max_header_list_decoded: 4 * 65_536,
            deflate_table_size: 4_096,
            max_continuations: 8,
            stream_reset_burst: 1_000,
            stream_reset_rate: 33,
            glitch_burst: 1_000,
            glitch_rate: 33,
            max_outbound_ack: 1_000,
            max_settings: 32,
            paced_stream_windows: false,
        }
    }

    /// A client's limits: as a server's, with Chrome's receive windows (6 MiB a stream, 15 MiB
    /// the connection), so that a response is not held back by flow control.
    pub fn client() -> Config {
        Config {
            initial_window_size: 6 * 1024 * 1024,
            connection_window_size: 15 * 1024 * 1024,
            ..Config::server()
        }
    }

    /// The initial SETTINGS: an array on the stack and how many entries it holds.
    pub(crate) fn settings(&self, client: bool) -> ([sys::nghttp2_settings_entry; 6], usize) {
        let entry = |id: u32, value: u32| sys::nghttp2_settings_entry {
            settings_id: id as i32,
            value,
        };
        let iv = [
            entry(
                sys::NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS,
                self.max_concurrent_streams,
            ),
            entry(
                sys::NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE,
                self.initial_window_size,
            ),
            entry(sys::NGHTTP2_SETTINGS_MAX_FRAME_SIZE, self.max_frame_size),
            entry(
                sys::NGHTTP2_SETTINGS_HEADER_TABLE_SIZE,
                self.header_table_size,
            ),
            entry(
                sys::NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
                self.max_header_list_size,
            ),
            // The last entry is the side's own. A client refuses push (a server must not
            // send ENABLE_PUSH with any value but 0, and has no use for it). A server says it
            // schedules by RFC 9218 alone (nghttp2 1.68 has no other scheduler), which lets it
            // apply a request's `priority` field itself (`messaging.rs`).
            if client {
                entry(sys::NGHTTP2_SETTINGS_ENABLE_PUSH, 0)
            } else {
                entry(sys::NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1)
            },
        ];
        (iv, iv.len())
    }

    /// Applies the options to a fresh `nghttp2_option`.
    ///
    /// # Safety
    /// `option` must be a live `nghttp2_option` from `nghttp2_option_new`.
    pub(crate) unsafe fn apply(&self, option: *mut sys::nghttp2_option) {
        // SAFETY: the caller guarantees `option` is live; each setter only stores a value in it.
        unsafe {
            sys::nghttp2_option_set_max_continuations(option, self.max_continuations);
            sys::nghttp2_option_set_stream_reset_rate_limit(
                option,
                self.stream_reset_burst,
                self.stream_reset_rate,
            );
            sys::nghttp2_option_set_glitch_rate_limit(option, self.glitch_burst, self.glitch_rate);
            sys::nghttp2_option_set_max_outbound_ack(option, self.max_outbound_ack);
            sys::nghttp2_option_set_max_settings(option, self.max_settings);
            if self.paced_stream_windows {
                sys::nghttp2_option_set_no_auto_window_update(option, 1);
            }
            sys::nghttp2_option_set_max_deflate_dynamic_table_size(option, self.deflate_table_size);
            // No server push: a client accepts no reserved (pushed) streams.
            sys::nghttp2_option_set_max_reserved_remote_streams(option, 0);
            // Until the peer's SETTINGS arrive, open no more streams than our own limit.
            sys::nghttp2_option_set_peer_max_concurrent_streams(
                option,
                self.max_concurrent_streams,
            );
        }
    }
}
