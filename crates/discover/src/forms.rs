//! The forms of a document and what submitting each would send, so that a workload can post
//! them: HTML's "constructing the entry list" (the fields a form submits: named, not disabled,
//! checkboxes and radio buttons only when checked, a `<select>`'s selected options, a
//! `<textarea>`'s text; buttons only as the submitter, so none here) and its URL-encoding.
//!
//! A crawl sends no form: [`Form::example`] writes each as a commented workload entry with the
//! page's own values, which the user completes (a password, a data set's column) and moves into
//! a page's files. A hidden field is often a per-session token (CSRF): the example says how to
//! extract it from the page first.
//!
//! Bounded as the rest of a hostile page: [`MAX_FORMS`] forms a document and [`MAX_FIELDS`]
//! fields a form are kept, the rest counted.

use scraper::ElementRef;
use url::Url;

/// Forms kept per document.
pub const MAX_FORMS: usize = 8;
/// Fields kept per form.
pub const MAX_FIELDS: usize = 64;

/// How a form's fields are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The fields as the action's query.
    Get,
    /// The fields as the body, encoded by [`Form::enctype`].
    Post,
}

/// A field of a form's entry list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The control's `name`, never empty (an unnamed control sends nothing).
    pub name: String,
    /// The page's value (empty where the page gave none).
    pub value: String,
    /// `input type=hidden`: the value is the page's own, often a per-session token.
    pub hidden: bool,
}

/// One `<form>` of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    /// The URL it submits to (the `action`, resolved; the document's URL when empty).
    pub action: Url,
    /// The action's path and query when it is on the document's origin (`None`: another
    /// origin, which a workload of this site cannot send to).
    pub path: Option<String>,
    /// The `method`: POST when it says so, GET otherwise.
    pub method: Method,
    /// `application/x-www-form-urlencoded` (the default), `multipart/form-data` or `text/plain`.
    pub enctype: String,
    /// Its entry list, in document order: the fields a submission sends, at most
    /// [`MAX_FIELDS`].
    pub fields: Vec<Field>,
    /// Fields past [`MAX_FIELDS`], not kept.
    pub fields_left_out: usize,
    /// Names of `input type=file` fields: a form with one sends files, which an example cannot.
    pub files: Vec<String>,
}

/// A document's forms: up to [`MAX_FORMS`] kept, the rest counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Forms {
    /// The first forms, in document order (`method=dialog` ones aside), at most [`MAX_FORMS`].
    pub kept: Vec<Form>,
    /// Forms past [`MAX_FORMS`], counted and not kept.
    pub left_out: usize,
}

impl Forms {
    /// Keeps `form` if there is room, else counts it.
    pub fn push(&mut self, form: Form) {
        if self.kept.len() < MAX_FORMS {
            self.kept.push(form);
        } else {
            self.left_out += 1;
        }
    }

    /// Lines for the workload, to be written as comments: each form's example, then what was
    /// left out.
    pub fn example(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.kept.iter().flat_map(Form::example).collect();
        if self.left_out > 0 {
            lines.push(format!(
                "{} more forms past {MAX_FORMS}: left out.",
                self.left_out
            ));
        }
        lines
    }
}

const URLENCODED: &str = "application/x-www-form-urlencoded";

impl Form {
    /// The form `el` (a `<form>` element), with `base` the URL relative actions resolve against
    /// and `document` the page's own URL (an empty action submits to it). `None` for a
    /// `method=dialog` form, which submits nothing.
    pub fn read(el: ElementRef<'_>, base: &Url, document: &Url) -> Option<Form> {
        let v = el.value();
        let method = match v.attr("method").map(|m| m.trim().to_ascii_lowercase()) {
            Some(m) if m == "post" => Method::Post,
            Some(m) if m == "dialog" => return None,
            _ => Method::Get,
        };
        let enctype = match v.attr("enctype").map(|e| e.trim().to_ascii_lowercase()) {
            Some(e) if e == "multipart/form-data" || e == "text/plain" => e,
            _ => URLENCODED.to_owned(),
        };
        let action = match v.attr("action").map(str::trim).filter(|a| !a.is_empty()) {
            Some(a) => base.join(a).ok()?,
            None => document.clone(),
        };
        let path = (action.origin() == document.origin()).then(|| {
            let mut p = action.path().to_owned();
            if let Some(q) = action.query() {
                p.push('?');
                p.push_str(q);
            }
            p
        });
        let mut form = Form {
            action,
            path,
            method,
            enctype,
            fields: Vec::new(),
            fields_left_out: 0,
            files: Vec::new(),
        };
        for control in el.descendants().filter_map(ElementRef::wrap) {
            form.control(control);
        }
        Some(form)
    }

    fn control(&mut self, el: ElementRef<'_>) {
        let v = el.value();
        let Some(name) = v.attr("name").filter(|n| !n.is_empty()) else {
            return;
        };
        if v.attr("disabled").is_some() || in_disabled_fieldset(el) {
            return;
        }
        let mut hidden = false;
        let value = match v.name() {
            "input" => {
                let kind = v.attr("type").unwrap_or("text").trim().to_ascii_lowercase();
                match kind.as_str() {
                    // Sent only by the button that submits; a crawl clicks none.
                    "submit" | "reset" | "button" | "image" => return,
                    "checkbox" | "radio" if v.attr("checked").is_none() => return,
                    "checkbox" | "radio" => v.attr("value").unwrap_or("on").to_owned(),
                    "file" => {
                        self.files.push(name.to_owned());
                        return;
                    }
                    _ => {
                        hidden = kind == "hidden";
                        v.attr("value").unwrap_or("").to_owned()
                    }
                }
            }
            "textarea" => el.text().collect(),
            "select" => {
                let options: Vec<ElementRef<'_>> = el
                    .descendants()
                    .filter_map(ElementRef::wrap)
                    .filter(|o| o.value().name() == "option")
                    .collect();
                let chosen: Vec<&ElementRef<'_>> = options
                    .iter()
                    .filter(|o| o.value().attr("selected").is_some())
                    .collect();
                let multiple = v.attr("multiple").is_some();
                // A single select with none selected shows (and sends) its first option.
                let picked: Vec<&ElementRef<'_>> = if chosen.is_empty() && !multiple {
                    options.iter().take(1).collect()
                } else if multiple {
                    chosen
                } else {
                    chosen.into_iter().take(1).collect()
                };
                for option in picked {
                    let value = match option.value().attr("value") {
                        Some(value) => value.to_owned(),
                        None => option.text().collect::<String>().trim().to_owned(),
                    };
                    self.push(name, value, false);
                }
                return;
            }
            _ => return,
        };
        self.push(name, value, hidden);
    }

    fn push(&mut self, name: &str, value: String, hidden: bool) {
        if self.fields.len() >= MAX_FIELDS {
            self.fields_left_out += 1;
            return;
        }
        self.fields.push(Field {
            name: name.to_owned(),
            value,
            hidden,
        });
    }

    /// The fields URL-encoded, as the form sends them (`a=1&b=x+y`).
    pub fn encoded(&self) -> String {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        for f in &self.fields {
            query.append_pair(&f.name, &f.value);
        }
        query.finish()
    }

    /// Lines for the workload, to be written as comments (without their `# `): the entry that
    /// sends this form, or why none is written.
    pub fn example(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let method = match self.method {
            Method::Get => "GET",
            Method::Post => "POST",
        };
        let Some(path) = self.path.as_deref() else {
            lines.push(format!(
                "A form ({method} {}) submits to another origin: not written.",
                self.action
            ));
            return lines;
        };
        if self.method == Method::Post && self.enctype != URLENCODED || !self.files.is_empty() {
            lines.push(format!(
                "A form ({method} {path}, {}{}) with fields {}: not written as an entry (its \
                 body is built by hand).",
                self.enctype,
                if self.files.is_empty() {
                    String::new()
                } else {
                    format!(", file fields {}", self.files.join(", "))
                },
                self.names()
            ));
            return lines;
        }
        lines.push(format!(
            "A form ({method} {path}): to send it, put this entry in a page's files and fill in \
             its values (the page's own; empty where it had none)."
        ));
        let encoded = self.encoded();
        match self.method {
            Method::Get => {
                let mut target = path.split('?').next().unwrap_or(path).to_owned();
                if !encoded.is_empty() {
                    target.push('?');
                    target.push_str(&encoded);
                }
                lines.push(format!(
                    "  {{ path = {} }},",
                    crate::workload::quote(&target)
                ));
            }
            Method::Post => {
                lines.push(format!(
                    "  {{ path = {}, method = \"POST\", body = {},",
                    crate::workload::quote(path),
                    crate::workload::quote(&encoded)
                ));
                lines.push(format!(
                    "    headers = {{ \"Content-Type\" = \"{URLENCODED}\" }} }},"
                ));
            }
        }
        for f in self
            .fields
            .iter()
            .filter(|f| f.hidden && extractable(&f.name))
        {
            lines.push(format!(
                "Hidden field `{0}`: if it changes per session, extract it from this page's \
                 HTML entry with extract = {{ {0} = {{ regex = 'name=\"{0}\"[^>]*value=\"([^\"]*)\"' }} }} \
                 and send {{{{{0}}}}} in its place.",
                f.name
            ));
        }
        if self.fields_left_out > 0 {
            lines.push(format!(
                "{} more fields past {MAX_FIELDS}: left out.",
                self.fields_left_out
            ));
        }
        lines
    }

    fn names(&self) -> String {
        let names: Vec<&str> = self.fields.iter().map(|f| f.name.as_str()).collect();
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    }
}

/// Whether a field's name can name an extracted value (letters, digits, `_`, `-`), and so
/// sits in the example's regular expression as it is.
fn extractable(name: &str) -> bool {
    !name.is_empty()
        && !matches!(name, "seq" | "random" | "webchild")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn in_disabled_fieldset(el: ElementRef<'_>) -> bool {
    el.ancestors()
        .filter_map(ElementRef::wrap)
        .take_while(|a| a.value().name() != "form")
        .any(|a| a.value().name() == "fieldset" && a.value().attr("disabled").is_some())
}

#[cfg(test)]
mod tests;
