//! The hop-by-hop field names a message's `Connection` fields list (RFC 9110 7.6.1), which a
//! proxy takes out with `Connection` itself: gathered in one pass, for the request head sent
//! upstream (`request.rs`, `forwarded.rs`) and the response head handed back (`response.rs`).

/// The field names a request's `Connection` fields list, gathered in one pass over the fields
/// without allocating: a few kept in place (those not dropped anyway); past that many, a name
/// is looked up in the `Connection` fields again (slower, but only for a request that names
/// more hop-by-hop fields than any client does).
pub(super) struct Named<'a> {
    names: [&'a [u8]; 8],
    count: usize,
    overflow: bool,
}

impl<'a> Named<'a> {
    /// The names `fields`' `Connection` fields list, but those `dropped` takes out anyway.
    pub(super) fn gather(
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        dropped: impl Fn(&[u8]) -> bool,
    ) -> Named<'a> {
        let mut named = Named {
            names: [&[]; 8],
            count: 0,
            overflow: false,
        };
        for value in connection_values(fields) {
            for token in value.split(|&b| b == b',').map(wire::trim_ows) {
                if token.is_empty() || dropped(token) || named.has(token) {
                    continue;
                }
                match named.names.get_mut(named.count) {
                    Some(slot) => {
                        *slot = token;
                        named.count += 1;
                    }
                    None => named.overflow = true,
                }
            }
        }
        named
    }

    /// Whether `name` is listed; `fields` are the same fields again, looked at only past the
    /// names kept.
    pub(super) fn lists(
        &self,
        name: &[u8],
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    ) -> bool {
        self.has(name)
            || (self.overflow
                && connection_values(fields)
                    .flat_map(|v| v.split(|&b| b == b','))
                    .any(|t| wire::trim_ows(t).eq_ignore_ascii_case(name)))
    }

    /// Whether `name` is among the names kept.
    fn has(&self, name: &[u8]) -> bool {
        self.names[..self.count]
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name))
    }
}

fn connection_values<'a>(
    fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> impl Iterator<Item = &'a [u8]> {
    fields
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"connection"))
        .map(|(_, v)| v)
}
