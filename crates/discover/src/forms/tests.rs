use super::*;
use crate::css::Env;
use crate::html;

fn forms_of(page: &str) -> Forms {
    let url = Url::parse("http://site.test/account/login.html").unwrap();
    html::parse(page, &url, None, &Env::default()).forms
}

/// The example's commented lines turned back into a workload `flint bench -w` reads.
fn uncommented(lines: &[String], page_path: &str) -> String {
    let entries: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("  "))
        .map(String::as_str)
        .collect();
    format!(
        "[[page]]\nname = \"p\"\nweight = 1\nfiles = [\n  {{ path = \"{page_path}\" }},\n{}\n]\n",
        entries.join("\n")
    )
}

const LOGIN: &str = r#"<!doctype html><title>in</title>
<form method="post" action="/session?next=%2Fhome">
  <input type="hidden" name="csrf" value="t0k&amp;en">
  <input name="user" value="">
  <input type="password" name="pass">
  <input type="checkbox" name="remember">
  <input type="checkbox" name="terms" checked>
  <input type="radio" name="plan" value="a">
  <input type="radio" name="plan" value="b" checked>
  <select name="lang"><option>en</option><option value="fr">French</option></select>
  <select name="tags" multiple><option selected>x</option><option>y</option><option value="z z" selected>Z</option></select>
  <textarea name="note">hello
there</textarea>
  <input name="gone" disabled value="1">
  <fieldset disabled><input name="inside" value="2"></fieldset>
  <input value="no name">
  <button name="go" value="1">Go</button>
  <input type="submit" name="send" value="Send">
</form>"#;

#[test]
fn a_form_submits_what_a_browser_would_in_document_order() {
    let forms = forms_of(LOGIN);
    assert_eq!(forms.kept.len(), 1);
    let form = &forms.kept[0];
    assert_eq!(form.method, Method::Post);
    assert_eq!(form.path.as_deref(), Some("/session?next=%2Fhome"));
    let got: Vec<(&str, &str)> = form
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.value.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("csrf", "t0k&en"),
            ("user", ""),
            ("pass", ""),
            ("terms", "on"),
            ("plan", "b"),
            ("lang", "en"),
            ("tags", "x"),
            ("tags", "z z"),
            ("note", "hello\nthere"),
        ]
    );
    assert!(form.fields[0].hidden && !form.fields[1].hidden);
    assert_eq!(
        form.encoded(),
        "csrf=t0k%26en&user=&pass=&terms=on&plan=b&lang=en&tags=x&tags=z+z&note=hello%0Athere"
    );
}

#[test]
fn the_example_is_an_entry_bench_reads_and_its_hint_extracts_the_token() {
    let forms = forms_of(LOGIN);
    let lines = forms.example();
    let text = uncommented(&lines, "/account/login.html");
    let workload =
        bench::Workload::parse(&text, "example").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let spec = &workload.requests[1];
    assert_eq!(spec.method.as_deref(), Some("POST"));
    let body = String::from_utf8(spec.body.clone().unwrap()).unwrap();
    assert!(body.starts_with("csrf=t0k%26en&user="), "{body}");
    // The hidden field's hint: a workload extraction whose expression finds the page's value.
    let hint = lines
        .iter()
        .find(|l| l.starts_with("Hidden field `csrf`"))
        .expect("a hint for the hidden field");
    let snippet = &hint[hint.find("extract = ").unwrap()..hint.find(" and send").unwrap()];
    let with_extract = format!(
        "[[page]]\nname = \"p\"\nweight = 1\nfiles = [\n  {{ path = \"/account/login.html\", {snippet} }},\n]\n"
    );
    bench::Workload::parse(&with_extract, "hint").unwrap_or_else(|e| panic!("{e}\n{with_extract}"));
    let pattern = &snippet[snippet.find('\'').unwrap() + 1..snippet.rfind('\'').unwrap()];
    let found = regex::Regex::new(pattern).unwrap().captures(LOGIN).unwrap();
    assert_eq!(
        &found[1], "t0k&amp;en",
        "the raw page's value, as the response holds it"
    );
}

#[test]
fn a_get_form_sends_its_fields_as_the_query_in_place_of_the_actions() {
    let forms = forms_of(
        r#"<form action="search?old=1"><input name="q" value="a b"><input type="image" name="i" src="go.png"></form>"#,
    );
    let form = &forms.kept[0];
    assert_eq!(form.method, Method::Get);
    let lines = form.example();
    assert!(
        lines[1].contains(r#"path = "/account/search?q=a+b""#),
        "{lines:?}"
    );
    let workload = bench::Workload::parse(&uncommented(&lines, "/x"), "get").unwrap();
    assert_eq!(workload.urls[1], "/account/search?q=a+b");
}

#[test]
fn forms_an_example_cannot_send_are_said_not_written() {
    let forms = forms_of(
        r#"<form method=post action="https://other.test/x"><input name=a></form>
        <form method=post enctype="multipart/form-data"><input name=a><input type=file name=doc></form>
        <form method=dialog><input name=a></form>
        <form action="/empty"></form>"#,
    );
    assert_eq!(forms.kept.len(), 3, "a dialog form submits nothing");
    let lines = forms.example();
    assert!(lines[0].contains("another origin"), "{lines:?}");
    assert!(
        lines[1].contains("multipart/form-data, file fields doc) with fields a: not written"),
        "{lines:?}"
    );
    assert!(lines[3].contains(r#"path = "/empty""#), "{lines:?}");
    assert_eq!(lines.len(), 4, "{lines:?}");
}

#[test]
fn a_page_of_many_forms_and_fields_keeps_a_bounded_number() {
    let many_fields: String = (0..MAX_FIELDS + 5)
        .map(|i| format!("<input name=f{i}>"))
        .collect();
    let page = format!(
        "<form>{many_fields}</form>{}<template><form><input name=t></form></template>",
        "<form><input name=a></form>".repeat(MAX_FORMS + 2)
    );
    let forms = forms_of(&page);
    assert_eq!(forms.kept.len(), MAX_FORMS);
    assert_eq!(
        forms.left_out, 3,
        "eleven forms past a cap of eight; the template's inert one not seen"
    );
    assert_eq!(forms.kept[0].fields.len(), MAX_FIELDS);
    assert_eq!(forms.kept[0].fields_left_out, 5);
    let lines = forms.example();
    assert!(lines
        .iter()
        .any(|l| l == "5 more fields past 64: left out."));
    assert_eq!(lines.last().unwrap(), "3 more forms past 8: left out.");
}
