//! The syntax several keys share: a `LEFT=RIGHT` flag or list entry, a list of strings each
//! parsed by its type's `FromStr`, and a URL prefix (auth zones, gateway mounts, proxy mounts).

/// `text` split at its first `=`; without one, the error says what was `expected`
/// (`PREFIX=DIR (`/cgi-bin/=/srv/cgi`)`).
pub(super) fn split_pair<'a>(text: &'a str, expected: &str) -> Result<(&'a str, &'a str), String> {
    text.split_once('=')
        .ok_or_else(|| format!("`{text}`: expected {expected}"))
}

/// A list of strings in the file, each parsed as a `T` (the error names the string).
pub(super) fn parsed_list_from_toml<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: std::str::FromStr<Err = String>,
{
    let texts = <Vec<String> as serde::Deserialize>::deserialize(d)?;
    (texts.iter())
        .map(|t| t.parse().map_err(serde::de::Error::custom))
        .collect()
}

/// A URL prefix in the file, as [`parse_auth_prefix`] takes it.
pub(super) fn prefix_from_toml<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(d)?;
    parse_auth_prefix(&text).map_err(serde::de::Error::custom)
}

/// A protected prefix as `--basic-auth` and `prefix` take it: a path under `/` without empty,
/// dot or escaped segments, its trailing slash dropped (`/` stays `/`).
pub fn parse_auth_prefix(prefix: &str) -> Result<String, String> {
    if prefix == "/" {
        return Ok(prefix.into());
    }
    let trimmed = prefix.trim_end_matches('/');
    let bad_segment = trimmed
        .split('/')
        .skip(1)
        .any(|seg| seg.is_empty() || seg.starts_with('.'));
    if !prefix.starts_with('/') || trimmed.is_empty() || bad_segment || prefix.contains('%') {
        return Err(format!(
            "`{prefix}`: the prefix must be a path under / without empty, dot or escaped segments"
        ));
    }
    Ok(trimmed.into())
}
