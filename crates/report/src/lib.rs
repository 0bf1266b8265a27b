//! `flint report`: results people would rather look at.
//!
//! Reads the JSON that `flint bench`, `flint compare` and `flint lab` write and renders one
//! self-contained HTML file: no network, no CDN, every chart an inline SVG with axes and units.
