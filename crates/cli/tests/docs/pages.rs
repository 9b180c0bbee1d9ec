//! The pages of the documentation (README.md and every `docs/**/*.md`) and
//! their fenced code blocks.

use std::path::{Path, PathBuf};

/// One Markdown page.
pub struct Page {
    /// Relative to the repository root (`README.md`, `docs/cli.md`).
    pub name: String,
    pub path: PathBuf,
    pub text: String,
}

/// One fenced code block of a page.
#[derive(Clone, Debug)]
pub struct Block {
    /// The first word of the info string (`console`, `rust`, `python` ...).
    pub lang: String,
    /// The whole info string (`rust,no_run`).
    pub info: String,
    /// The text between the fences (each line with its newline).
    pub body: String,
    /// The 1-based line of the opening fence.
    pub line: usize,
    /// Byte range of the body in the page's text.
    pub body_range: std::ops::Range<usize>,
}

impl Page {
    pub fn read(root: &Path, name: &str) -> Page {
        let path = root.join(name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        Page {
            name: name.to_string(),
            path,
            text,
        }
    }

    /// The fenced code blocks, in order. A fence is a line of three or more
    /// backticks (indented at most three spaces, as in lists); the block
    /// ends at a line with the same indentation and at least as many.
    pub fn blocks(&self) -> Vec<Block> {
        let mut blocks = Vec::new();
        let mut offset = 0;
        let mut open: Option<(String, String, usize, usize, usize)> = None;
        for (i, line) in self.text.split_inclusive('\n').enumerate() {
            let trimmed = line.trim_start();
            let ticks = trimmed.chars().take_while(|c| *c == '`').count();
            match &open {
                None if ticks >= 3 => {
                    let info = trimmed[ticks..].trim().to_string();
                    let lang = info
                        .split([',', ' '])
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    open = Some((lang, info, i + 1, offset + line.len(), ticks));
                }
                Some((lang, info, first, start, n))
                    if ticks >= *n && trimmed[ticks..].trim().is_empty() =>
                {
                    let body_range = *start..offset;
                    blocks.push(Block {
                        lang: lang.clone(),
                        info: info.clone(),
                        body: self.text[body_range.clone()].to_string(),
                        line: *first,
                        body_range,
                    });
                    open = None;
                }
                _ => {}
            }
            offset += line.len();
        }
        assert!(open.is_none(), "{}: a code block is not closed", self.name);
        blocks
    }

    /// The page's `<!-- docs-test: WORDS -->` directives (what the examples
    /// need: `cluster`, `tls`, ...).
    pub fn directives(&self) -> Vec<String> {
        self.text
            .split("<!-- docs-test:")
            .skip(1)
            .filter_map(|rest| rest.split("-->").next())
            .flat_map(|words| words.split_whitespace().map(str::to_string))
            .collect()
    }

    /// The 1-based line of byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.text[..offset].matches('\n').count() + 1
    }
}

/// The root of the repository.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// README.md and every Markdown page under docs/, sorted.
pub fn all() -> Vec<Page> {
    let root = root();
    every_file()
        .iter()
        .filter(|n| n.ends_with(".md"))
        .map(|n| Page::read(&root, n))
        .collect()
}

/// The 1-based lines of `text` that are merge-conflict markers: a line that
/// is (after any indentation, so also inside a block's example output)
/// `<<<<<<<`, `|||||||`, `=======` or `>>>>>>>`, alone or followed by a
/// space and a name. A Markdown heading underlined with exactly seven `=`
/// is refused too: underline it with more, or write `#`.
pub fn conflict_markers(text: &str) -> Vec<usize> {
    let is_marker = |line: &str| {
        let line = line.trim();
        ['<', '|', '=', '>'].iter().any(|&c| {
            let run = line.chars().take_while(|&l| l == c).count();
            run == 7 && (line.len() == 7 || line[7..].starts_with(' '))
        })
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| is_marker(line))
        .map(|(i, _)| i + 1)
        .collect()
}

/// Every file of the documentation: README.md and all below docs/ (pages,
/// the book's settings), relative to the root, sorted.
pub fn every_file() -> Vec<String> {
    let root = root();
    let mut found = vec!["README.md".to_string()];
    let mut stack = vec![root.join("docs")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("docs/") {
            let path = entry.expect("a docs/ entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(&root).unwrap();
                found.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    found
}
