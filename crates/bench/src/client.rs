//! The hot path: one thread's event loop over its Webchildren's connections. (Engine helper.)
