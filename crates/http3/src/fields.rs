//! Header fields: a received list (as QPACK decoded it), and the pairs a caller sends.

use quiche::h3::NameValue;

/// A field to send: name (lowercase, pseudo-headers first) and value, borrowed.
pub type Field<'a> = (&'a [u8], &'a [u8]);

/// The most fields one header block may carry when sent (they are gathered on the stack).
pub const MAX_FIELDS: usize = 64;

/// A received header block (request, response or trailers), in the order it came.
#[derive(Debug, Clone, Default)]
pub struct Fields(pub(crate) Vec<quiche::h3::Header>);

impl Fields {
    /// The first field named `name` (lowercase, as HTTP/3 requires on the wire).
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.0.iter().find(|h| h.name() == name).map(|h| h.value())
    }

    /// Every field, in order (cloneable: a gateway reads them twice).
    pub fn iter(&self) -> impl Iterator<Item = Field<'_>> + Clone {
        self.0.iter().map(|h| (h.name(), h.value()))
    }

    /// How many fields it holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it holds no field.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `:method`.
    pub fn method(&self) -> Option<&[u8]> {
        self.get(b":method")
    }

    /// `:path`.
    pub fn path(&self) -> Option<&[u8]> {
        self.get(b":path")
    }

    /// `:authority`.
    pub fn authority(&self) -> Option<&[u8]> {
        self.get(b":authority")
    }
}

/// `:status` and `fields` as one list on the stack (QPACK takes one slice), with no allocation.
pub(crate) fn with_status<'a, R>(
    status: &'a [u8; 3],
    fields: &[Field<'a>],
    then: impl FnOnce(&[Field<'a>]) -> R,
) -> Option<R> {
    if fields.len() >= MAX_FIELDS {
        return None;
    }
    let mut list: [Field<'a>; MAX_FIELDS] = [(b"", b""); MAX_FIELDS];
    list[0] = (b":status", status);
    list[1..=fields.len()].copy_from_slice(fields);
    Some(then(&list[..=fields.len()]))
}

/// A status code as its three digits (100 to 999; others are refused by the caller).
pub(crate) fn status_digits(status: u16) -> [u8; 3] {
    [
        b'0' + (status / 100 % 10) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_written_as_three_digits() {
        assert_eq!(status_digits(503), *b"503");
    }

    #[test]
    fn the_status_goes_first_and_too_many_fields_are_refused() {
        let fields = [(&b"content-length"[..], &b"5"[..])];
        let names = with_status(b"200", &fields, |l| {
            l.iter().map(|f| f.0.to_vec()).collect::<Vec<_>>()
        })
        .unwrap();
        assert_eq!(names, vec![b":status".to_vec(), b"content-length".to_vec()]);
        let many = [(&b"x"[..], &b"y"[..]); MAX_FIELDS];
        assert!(with_status(b"200", &many, |_| ()).is_none());
    }
}
