//! `console` blocks: shell sessions. A line `$ COMMAND` is a command (a
//! trailing `\` continues it on the next line; `# ...` after it is a shell
//! comment), the lines after it up to the next `$ ` are what it prints
//! (stdout and stderr as a terminal shows them). In what is shown, `[..]`
//! stands for any text within a line (a token, a clock value) and a line
//! `...` for any number of lines.

/// One command of a session and what the page shows it printing.
#[derive(Clone, Debug)]
pub struct Command {
    /// The command's lines, without the `$ ` (continuations included).
    pub lines: Vec<String>,
    /// The lines shown after it.
    pub expected: Vec<String>,
}

impl Command {
    /// The command as the shell runs it.
    pub fn script(&self) -> String {
        self.lines.join("\n")
    }
}

/// The commands of a console block; `Err` when it does not start with `$ `.
pub fn parse(body: &str) -> Result<Vec<Command>, String> {
    let mut commands: Vec<Command> = Vec::new();
    let mut continued = false;
    for line in body.lines() {
        if continued {
            let last = commands.last_mut().expect("a command");
            last.lines.push(line.to_string());
            continued = line.ends_with('\\');
        } else if let Some(cmd) = line.strip_prefix("$ ") {
            commands.push(Command {
                lines: vec![cmd.to_string()],
                expected: Vec::new(),
            });
            continued = cmd.ends_with('\\');
        } else {
            match commands.last_mut() {
                Some(c) => c.expected.push(line.to_string()),
                None => return Err(format!("a console block starts with `$ `, not {line:?}")),
            }
        }
    }
    Ok(commands)
}

/// The block's text again, with `commands` (for writing new outputs).
pub fn render(commands: &[Command]) -> String {
    let mut out = String::new();
    for c in commands {
        for (i, l) in c.lines.iter().enumerate() {
            out.push_str(if i == 0 { "$ " } else { "" });
            out.push_str(l);
            out.push('\n');
        }
        for l in &c.expected {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// Whether `actual` is what `expected` shows (`[..]` and `...` as above;
/// trailing spaces ignored).
pub fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first.trim() == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => match actual.split_first() {
            Some((a, more)) => line_matches(first, a) && matches(rest, more),
            None => false,
        },
    }
}

/// One line against its shown form, where `[..]` is any text.
pub fn line_matches(expected: &str, actual: &str) -> bool {
    let (expected, actual) = (expected.trim_end(), actual.trim_end());
    let parts: Vec<&str> = expected.split("[..]").collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &actual[first.len()..];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// What to show instead of `expected` for `actual`: the actual lines, but
/// where a shown line still matches one (in order, the longest run of such
/// pairs) the shown line, so that its `[..]` stay.
pub fn updated(expected: &[String], actual: &[String]) -> Vec<String> {
    let (n, m) = (expected.len(), actual.len());
    // lcs[i][j]: the longest matching run of expected[i..] and actual[j..].
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if line_matches(&expected[i], &actual[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while j < m {
        if i < n && line_matches(&expected[i], &actual[j]) && lcs[i][j] == lcs[i + 1][j + 1] + 1 {
            out.push(expected[i].clone());
            i += 1;
            j += 1;
        } else if i < n && lcs[i + 1][j] >= lcs[i][j + 1] {
            i += 1;
        } else {
            out.push(actual[j].clone());
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    #[test]
    fn wildcards_match_within_a_line_and_across_lines() {
        assert!(line_matches("token [..]", "token 3fa9"));
        assert!(line_matches("a [..] b [..] c", "a 1 b 2 c"));
        assert!(!line_matches("a [..] b", "a 1 c"));
        assert!(!line_matches("(integer) 1", "(integer) 12"));
        assert!(matches(&lines("a\n...\nz"), &lines("a\nb\nc\nz")));
        assert!(matches(&lines("a\n...\nz"), &lines("a\nz")));
        assert!(!matches(&lines("a\nz"), &lines("a\nb\nz")));
        assert!(!matches(&lines(""), &lines("x")));
    }

    #[test]
    fn an_update_keeps_the_shown_lines_that_still_match() {
        let shown = lines("a\nseconds [..]\nz");
        let now = lines("a\nnew line\nseconds 0.1\nz\nmore");
        assert_eq!(
            updated(&shown, &now),
            lines("a\nnew line\nseconds [..]\nz\nmore")
        );
        assert_eq!(updated(&lines("x\ny"), &lines("y")), lines("y"));
    }

    #[test]
    fn a_session_parses_into_commands_and_renders_back() {
        let body = "$ redis-cli SET a \\\n  b   # a comment\nOK\n$ redis-cli GET a\n\"b\"\n";
        let cmds = parse(body).unwrap();
        assert_eq!(cmds.len(), 2);
        assert_eq!(cmds[0].script(), "redis-cli SET a \\\n  b   # a comment");
        assert_eq!(cmds[0].expected, vec!["OK"]);
        assert_eq!(render(&cmds), body);
        assert!(parse("OK\n").is_err());
    }
}
