//! The README's host example is `examples/host.rs` verbatim (between its README markers), so the
//! README never shows code that does not compile.

#[test]
fn readme_host_example_is_the_compiled_example() {
    let example = include_str!("../../examples/host.rs");
    let readme = include_str!("../../../../README.md");
    let begin = example
        .find("// README:begin\n")
        .map(|i| i + "// README:begin\n".len());
    let end = example.find("// README:end");
    let (Some(begin), Some(end)) = (begin, end) else {
        panic!("examples/host.rs lost its README markers");
    };
    let snippet = &example[begin..end];
    assert!(
        readme.contains(snippet),
        "README.md must contain the lines between the README markers of crates/a2aflow/examples/host.rs"
    );
}
