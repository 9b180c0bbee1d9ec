//! The shipped script: the file's header, the generated checks, the
//! functions of its includes, then the file's body; and its SHA1, the
//! `EVALSHA` handle.

use super::checks::lua_checks;
use crate::include::Include;
use crate::script::ScriptSpec;

impl ScriptSpec {
    /// The script as shipped: the file's header, the generated checks, the
    /// functions of its includes, then the file's body (so line 1 stays
    /// the shebang).
    pub fn shipped(&self) -> String {
        let source = &self.header.source;
        let (head, body) = source.split_at(self.header.body_offset);
        let mut out = String::with_capacity(source.len() + self.inlined.len() + 2048);
        out.push_str(head);
        if !head.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&lua_checks(self));
        out.push_str(&self.inlined);
        out.push_str(body);
        out
    }

    /// The generated checks alone (what [`ScriptSpec::shipped`] inserts).
    pub fn checks(&self) -> String {
        lua_checks(self)
    }
}

impl Include {
    /// The text a script that includes it ships after its generated
    /// checks: the include's body between two marker lines.
    pub fn inlined(&self) -> String {
        let header = &self.header;
        let body = header.source[header.body_offset..].trim_start_matches('\n');
        let mut out = format!(
            "-- included from lua/{} (crates/codegen: INCLUDE {})\n",
            header.file, self.name
        );
        out.push_str(body);
        if !body.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("-- end of lua/{}\n", header.file));
        out
    }
}

/// The functions of `listed` and of the includes they include, each once,
/// an include after those it includes.
pub(crate) fn inline_all(listed: &[&Include], known: &[Include]) -> String {
    fn visit<'a>(
        inc: &'a Include,
        known: &'a [Include],
        done: &mut Vec<&'a str>,
        out: &mut String,
    ) {
        if done.contains(&inc.name.as_str()) {
            return;
        }
        for name in &inc.header.includes {
            let dep = known
                .iter()
                .find(|i| &i.name == name)
                .expect("an include's includes were resolved when it was parsed");
            visit(dep, known, done, out);
        }
        done.push(&inc.name);
        out.push_str(&inc.inlined());
    }
    let mut done = Vec::new();
    let mut out = String::new();
    for inc in listed {
        visit(inc, known, &mut done, &mut out);
    }
    out
}

/// Lowercase hex SHA1 of `bytes`: the `EVALSHA` handle of a script.
pub fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}
