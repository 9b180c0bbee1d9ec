//! TypeScript's spelling of the client surface ([`Surface`]): the errors
//! (`errors`, one hierarchy under `RedisPatternsError extends Error`, each
//! class carrying its data), the records (`records`, interfaces of plain
//! objects) and the classes (`index`: each checks its inputs, then hands
//! them to its pattern's operations in `ops/` and runs them with the
//! client's Runner), each in the three spellings of [`Mode`].

use std::fmt::Write as _;

use redis_patterns::contract::ErrorCode;
use redis_patterns::contract::api::{self, Class, ErrorDecl, Operation, Param, Record, Type};
use serde_json::Value;

use super::super::Lang;
use super::super::surface::{Dir, Part, Surface, is_class};
use super::emit::{F, Mode, P, camel, ident, indent, jsdoc, lit};

/// The TypeScript surface in one spelling.
pub(crate) struct TsSurface {
    pub mode: Mode,
    /// The members of the class being written.
    members: String,
    /// Whether the file is `records` (records are named without `r.`).
    in_records: bool,
}

impl TsSurface {
    pub(crate) fn new(mode: Mode) -> Self {
        Self {
            mode,
            members: String::new(),
            in_records: false,
        }
    }
}

/// Error data named like a member of `Error` get another name.
const ERROR_RENAMES: &[(&str, &str)] = &[("name", "argument"), ("message", "serverMessage")];

/// The property of an error datum.
fn error_field(name: &str) -> String {
    ERROR_RENAMES
        .iter()
        .find(|(from, _)| *from == name)
        .map_or_else(|| ident(name), |(_, to)| to.to_string())
}

/// A record field's property name (quoted when it is a reserved word).
fn property(name: &str) -> String {
    let c = camel(name);
    if ident(name) == c { c } else { lit(&c) }
}

/// A JSON default as a JavaScript literal.
fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => lit(s),
        v => v.to_string(),
    }
}

impl Surface for TsSurface {
    const LANG: Lang = Lang::Typescript;

    fn ty(&self, t: &Type, dir: Dir) -> String {
        let each = |t: &Type| self.ty(t, dir);
        match (t, dir) {
            (Type::Str | Type::Name | Type::Token | Type::Prefix, _) => "string".into(),
            (Type::Bytes, Dir::In) => "string | Uint8Array".into(),
            (Type::Bytes, Dir::Out) => "Buffer".into(),
            (Type::Int, Dir::In) => "number | bigint".into(),
            (Type::Int | Type::UInt | Type::Range(..) | Type::Ms | Type::Float, _) => {
                "number".into()
            }
            (Type::Bool, _) => "boolean".into(),
            (Type::Date, Dir::In) => "Date | string".into(),
            (Type::Date, Dir::Out) => "string".into(),
            (Type::Any, _) => "unknown".into(),
            (Type::Null, _) => "null".into(),
            (Type::Enum(words), _) => words.iter().map(|w| lit(w)).collect::<Vec<_>>().join(" | "),
            (Type::List(t), Dir::In) => format!("readonly {}", array(&each(t))),
            (Type::List(t), Dir::Out) => array(&each(t)),
            (Type::Opt(t), _) => format!("{} | null", each(t)),
            (Type::Tuple(ts), _) => {
                let ro = if dir == Dir::In { "readonly " } else { "" };
                format!(
                    "{ro}[{}]",
                    ts.iter().map(each).collect::<Vec<_>>().join(", ")
                )
            }
            (Type::Map(k, v), Dir::In) => format!(
                "Readonly<Record<{0}, {1}>> | ReadonlyMap<{0}, {1}>",
                each(k),
                each(v)
            ),
            (Type::Map(k, v), Dir::Out) => format!("Record<{}, {}>", each(k), each(v)),
            (Type::Named(n), _) if is_class(n) => n.clone(),
            (Type::Named(n), _) if self.in_records => n.clone(),
            (Type::Named(n), _) => format!("r.{n}"),
        }
    }

    fn quote(s: &str) -> String {
        lit(s)
    }

    fn after_words(&self) -> &str {
        self.mode.ts(" as const")
    }

    fn record_check(&self, record: &str, name: &str, var: &str, depth: usize) -> String {
        let decl = super::super::surface::records()
            .into_iter()
            .find(|r| r.name == record)
            .unwrap_or_else(|| panic!("{name}: {record} is not a record"));
        let x = format!("x{depth}");
        let fields: Vec<String> = decl
            .fields
            .iter()
            .map(|f| {
                let what = format!("{name}.{}", f.name);
                format!(
                    "{}: ({x}) => {}",
                    property(&f.name),
                    self.check(&f.ty, &what, &x, depth + 1)
                )
            })
            .collect();
        format!(
            "c.record{}({}, {var}, {{ {} }})",
            self.mode.ts(&format!("<r.{record}>")),
            lit(name),
            fields.join(", ")
        )
    }

    fn header(&mut self, out: &mut String, part: Part) {
        let m = self.mode;
        self.in_records = part == Part::Records;
        match part {
            Part::Errors => {
                out.push_str(&m.opening(
                    "The errors of every pattern, one class per kind with its data, from the API\n// description (src/contract/errors.api in the redis-patterns crate).",
                ));
                out.push_str(&error_base(m));
            }
            Part::Records => out.push_str(&m.opening(
                "The named results of every pattern (plain objects), from the API description\n// (src/<pattern>/client.api in the redis-patterns crate).",
            )),
            Part::Classes => {
                out.push_str(&m.opening(
                    "redis-patterns for Node (ioredis): every pattern's classes, generated from\n// the API description (src/<pattern>/client.api in the redis-patterns crate).",
                ));
                out.push_str(&classes_header(m));
            }
        }
    }

    fn error(&mut self, out: &mut String, e: &ErrorDecl) {
        out.push('\n');
        out.push_str(&self.error_class(e));
    }

    fn record(&mut self, out: &mut String, r: &Record) {
        let mut fields = String::new();
        for f in &r.fields {
            fields.push_str(&jsdoc("  ", &f.doc));
            let _ = writeln!(
                fields,
                "  readonly {}: {};",
                property(&f.name),
                self.ty(&f.ty, Dir::Out)
            );
        }
        out.push_str(
            &self
                .mode
                .export_type(&r.doc, &format!("interface {} {{\n{fields}}}\n", r.name)),
        );
    }

    fn class_open(&mut self, out: &mut String, pattern: &str, c: &Class) {
        self.members.clear();
        self.members
            .push_str(&self.mode.private_field("run", "d.Runner"));
        self.members.push_str(
            &self
                .mode
                .private_field("core", &format!("ops.{}.{}", camel(pattern), c.name)),
        );
        match &c.new {
            Some(new) => {
                let opts = self.options_type(new);
                if !opts.is_empty() {
                    out.push_str(&self.mode.export_type(
                        &format!("The optional settings of a {}.", c.name),
                        &format!("interface {}Options {opts}\n", c.name),
                    ));
                }
                let ctor = self.constructor(pattern, c, new);
                self.members.push_str(&ctor);
            }
            None => {
                let f = F::constructor(
                    "Made by the class's static operations.",
                    Vec::new(),
                    "throw new Error(\"made by the class's static operations\");\n".into(),
                )
                .flagged(&["private"]);
                let ctor = self.mode.method(&f);
                self.members.push_str(&ctor);
            }
        }
        for g in &c.getters {
            let name = camel(&g.name);
            let f = F::new(
                &g.doc,
                &name,
                Vec::new(),
                &self.ty(&g.ty, Dir::Out),
                format!("return this.core.{name};\n"),
            )
            .flagged(&["get"]);
            let m = self.mode.method(&f);
            self.members.push_str(&m);
        }
    }

    fn op(&mut self, _out: &mut String, pattern: &str, c: &Class, op: &Operation) {
        let m = if op.name == "hold" {
            self.hold(op)
        } else {
            self.operation(pattern, c, op)
        };
        self.members.push_str(&m);
    }

    fn class_close(&mut self, out: &mut String, c: &Class) {
        out.push('\n');
        out.push_str(&self.mode.class(&c.doc, &c.name, &self.members));
    }

    fn footer(&mut self, out: &mut String, part: Part) {
        match part {
            Part::Errors => out.push_str(&from_code(self.mode)),
            Part::Classes => out.push_str(&classes_footer(self.mode)),
            Part::Records => {}
        }
    }
}

impl TsSurface {
    fn error_class(&self, e: &ErrorDecl) -> String {
        let m = self.mode;
        let mut members = String::new();
        let mut params = Vec::new();
        let mut assigns = String::new();
        let mut data = Vec::new();
        for f in &e.fields {
            let prop = error_field(&f.name);
            let ty = self.ty(&f.ty, Dir::Out);
            members.push_str(&m.field("", &format!("readonly {prop}"), &ty));
            params.push(P::new(prop.clone(), ty));
            let _ = writeln!(assigns, "this.{prop} = {prop};");
            data.push((f.name.clone(), prop));
        }
        params.push(P::new("text", "string | null").or("null"));
        let described: Vec<String> = data.iter().map(|(n, p)| format!("{n}: {p}")).collect();
        let kind = lit(&e.name);
        let body = format!(
            "super({kind}, text ?? describe({{ {} }}));\n{assigns}",
            described.join(", ")
        );
        let ctor = F::constructor("", params, body);
        members.push_str(&m.method(&ctor));
        let fields: Vec<String> = data.iter().map(|(n, p)| format!("{n}: this.{p}")).collect();
        let getter = F::new(
            DATA_DOC,
            "data",
            Vec::new(),
            "Record<string, unknown>",
            format!("return {{ {} }};\n", fields.join(", ")),
        );
        members.push_str(&m.method(&getter));
        m.class(
            &e.doc,
            &format!("{} extends RedisPatternsError", e.name),
            &members,
        )
    }

    /// `{ readonly leaseMs?: number; ... }` of the optional inputs (empty: none).
    fn options_type(&self, params: &[Param]) -> String {
        let opts: Vec<String> = params
            .iter()
            .filter(|p| p.default.is_some())
            .map(|p| format!("readonly {}?: {}", camel(&p.name), self.ty(&p.ty, Dir::In)))
            .collect();
        if opts.is_empty() {
            String::new()
        } else {
            format!("{{ {}; }}", opts.join("; "))
        }
    }

    /// The inputs of a signature: the required ones, then `options` of the optional ones.
    fn params(&self, params: &[Param], options: Option<String>) -> Vec<P> {
        let mut out: Vec<P> = params
            .iter()
            .filter(|p| p.default.is_none())
            .map(|p| P::new(ident(&p.name), self.ty(&p.ty, Dir::In)))
            .collect();
        if let Some(ty) = options {
            out.push(P::new("options", ty).or("{}"));
        }
        out
    }

    /// Each input checked into `v_<name>` (the optional ones from `options`).
    fn checks(&self, params: &[Param]) -> String {
        let mut out = String::new();
        let names: Vec<String> = params
            .iter()
            .filter(|p| p.default.is_some())
            .map(|p| lit(&camel(&p.name)))
            .collect();
        if !names.is_empty() {
            let _ = writeln!(
                out,
                "const o = c.options(\"options\", options, [{}]);",
                names.join(", ")
            );
        }
        for p in params {
            let var = match &p.default {
                None => ident(&p.name),
                Some(d) => {
                    let o = camel(&p.name);
                    format!("o.{o} === undefined ? {} : o.{o}", literal(d))
                }
            };
            let _ = writeln!(
                out,
                "const v_{} = {};",
                p.name,
                self.check(&p.ty, &p.name, &var, 0)
            );
        }
        out
    }

    fn call_args(params: &[Param]) -> String {
        params
            .iter()
            .map(|p| format!("v_{}", p.name))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn constructor(&self, pattern: &str, c: &Class, new: &[Param]) -> String {
        let opts = (!self.options_type(new).is_empty()).then(|| format!("{}Options", c.name));
        let mut params = vec![P::new("client", "Client")];
        params.extend(self.params(new, opts));
        let body = format!(
            "{}this.run = new d.Runner(client);\nthis.core = new ops.{}.{}({});\n",
            self.checks(new),
            camel(pattern),
            c.name,
            Self::call_args(new)
        );
        let doc = format!(
            "A {} on an ioredis Redis or Cluster client; settings are checked here.",
            c.name
        );
        self.mode.method(&F::constructor(&doc, params, body))
    }

    fn op_doc(op: &Operation) -> String {
        if op.raises.is_empty() {
            op.doc.clone()
        } else {
            format!("{}\n\nThrows {} (errors).", op.doc, op.raises.join(", "))
        }
    }

    /// One operation: checks, then the runtime call (a class result wrapped).
    fn operation(&self, pattern: &str, c: &Class, op: &Operation) -> String {
        let opts = self.options_type(&op.params);
        let mut params = Vec::new();
        if op.is_static && !op.pure {
            params.push(P::new("client", "Client"));
        }
        params.extend(self.params(&op.params, (!opts.is_empty()).then_some(opts)));
        let name = camel(&op.name);
        let args = Self::call_args(&op.params);
        let io_args = if args.is_empty() {
            "io".to_string()
        } else {
            format!("io, {args}")
        };
        let out_ty = self.ty(&op.returns, Dir::Out);
        let (flags, ret, call): (&[&str], String, String) = if op.pure {
            (&[], out_ty, format!("return this.core.{name}({args});\n"))
        } else if op.is_static {
            let core = format!("ops.{}.{}.{name}({io_args})", camel(pattern), c.name);
            (
                &["static", "async"],
                format!("Promise<{}>", promised(&out_ty)),
                format!(
                    "const run = new d.Runner(client);\n{}",
                    wrapped(&op.returns, &format!("run.op((io) => {core})"), "run")
                ),
            )
        } else {
            let core = format!("this.core.{name}({io_args})");
            (
                &["async"],
                format!("Promise<{}>", promised(&out_ty)),
                wrapped(
                    &op.returns,
                    &format!("this.run.op((io) => {core})"),
                    "this.run",
                ),
            )
        };
        let doc = Self::op_doc(op);
        let body = format!("{}{call}", self.checks(&op.params));
        self.mode
            .method(&F::new(&doc, &name, params, &ret, body).flagged(flags))
    }

    /// `hold` as `using(..., body)`: the body runs while the lease is held.
    fn hold(&self, op: &Operation) -> String {
        let mut params = self.params(&op.params, None);
        params.push(P::new("body", "(held: r.Held) => Promise<T>"));
        let args = Self::call_args(&op.params);
        let doc = format!(
            "{}\n\nResolves to what the body resolves to; `held.lost` turns true as soon as a renewal\nfinds the lease gone (LockLost is thrown at the end then).",
            Self::op_doc(op)
        );
        let body = format!(
            "{}const v_body = c.fn(\"body\", body);\nreturn h.hold(this.run, this.core.holder({args}), v_body);\n",
            self.checks(&op.params)
        );
        self.mode.method(&F {
            generics: "<T>",
            ..F::new(&doc, "using", params, "Promise<T>", body).flagged(&["async"])
        })
    }
}

/// `T[]`, with parentheses around a union.
pub(crate) fn array(of: &str) -> String {
    if of.contains(' ') {
        format!("({of})[]")
    } else {
        format!("{of}[]")
    }
}

/// `null` results resolve to nothing.
fn promised(ty: &str) -> String {
    if ty == "null" {
        "void".into()
    } else {
        ty.into()
    }
}

/// `return <run>`, a class handle wrapped in its class.
fn wrapped(t: &Type, run: &str, runner: &str) -> String {
    match t {
        Type::Named(n) if is_class(n) => format!("return wrap({n}, {runner}, await {run});\n"),
        Type::Tuple(ts) => match ts
            .iter()
            .position(|t| matches!(t, Type::Named(n) if is_class(n)))
        {
            Some(i) => {
                let parts: Vec<String> = ts
                    .iter()
                    .enumerate()
                    .map(|(j, t)| match t {
                        Type::Named(n) if j == i => format!("wrap({n}, {runner}, got[{j}])"),
                        _ => format!("got[{j}]"),
                    })
                    .collect();
                format!("const got = await {run};\nreturn [{}];\n", parts.join(", "))
            }
            None => format!("return {run};\n"),
        },
        _ => format!("return {run};\n"),
    }
}

/// The doc of every error class's `data()`.
const DATA_DOC: &str = "The error's data, by the description's names.";

/// The base class of every error (first in `errors`).
fn error_base(m: Mode) -> String {
    let mut out = String::new();
    if m != Mode::Dts {
        out.push_str(&format!(
            "\n/** The message of an error: its data (its name says its kind). */\nfunction describe(data{0}){1} {{\n  return Object.entries(data)\n    .filter(([, v]) => v !== null && v !== undefined)\n    .map(([k, v]) => `${{k}}=${{JSON.stringify(v)}}`)\n    .join(\", \");\n}}\n",
            m.typed(": Record<string, unknown>"),
            m.typed(": string")
        ));
    }
    let ctor = F::constructor(
        "",
        vec![P::new("kind", "string"), P::new("text", "string")],
        "super(text);\nthis.kind = kind;\nthis.name = kind;\n".into(),
    );
    let data = F::new(
        DATA_DOC,
        "data",
        Vec::new(),
        "Record<string, unknown>",
        "return {};\n".into(),
    );
    let members = format!(
        "{}{}{}",
        m.field(
            "The error's kind (the Rust ErrorKind): its class's name.",
            "readonly kind",
            "string"
        ),
        m.method(&ctor),
        m.method(&data)
    );
    out.push('\n');
    out.push_str(&m.class(
        "Every error of this package: its class names its kind and its properties carry\nits data (data() gives them by the description's names).",
        "RedisPatternsError extends Error",
        &members,
    ));
    out
}

/// `BY_CODE` and `fromCode`: the error of a script's `-CODE detail` reply.
fn from_code(m: Mode) -> String {
    let mut table = String::from("{\n");
    for e in ErrorCode::ALL {
        let _ = writeln!(table, "  {}: {},", lit(e.code), lit(e.kind));
    }
    table.push('}');
    let mut out = String::from("\n");
    out.push_str(&m.export_const(
        "The error kind of each domain error code of the scripts.",
        "BY_CODE",
        "Readonly<Record<string, string>>",
        &table,
    ));
    // The kinds made of a script and its detail alone.
    let mut cases = String::new();
    for e in &api::Api::errors().errors {
        let names: Vec<&str> = e.fields.iter().map(|f| f.name.as_str()).collect();
        if !names.is_empty() && names.iter().all(|n| *n == "script" || *n == "detail") {
            let _ = writeln!(
                cases,
                "  case {}:\n    return new {}({}, text);",
                lit(&e.name),
                e.name,
                names.join(", ")
            );
        }
    }
    let body = format!(
        "const kind = BY_CODE[code];\nconst text = `script ${{script}}: ${{code}} ${{detail}}`;\nif (kind === \"InvalidArgument\") {{\n  const at = detail.indexOf(\" \");\n  return new InvalidArgument(at < 0 ? detail : detail.slice(0, at), at < 0 ? \"\" : detail.slice(at + 1), script);\n}}\nif (kind === \"NotEnoughMemory\" || code === \"MAXMEMORY\") {{\n  const words = detail.split(\" \");\n  const num = (w{0}) => {{\n    const at = words.indexOf(w);\n    const x = at >= 0 && at + 1 < words.length ? words[at + 1].replace(/:$/, \"\") : \"\";\n    return /^[0-9]+$/.test(x) ? Number(x) : 0;\n  }};\n  const what = detail.includes(\": \") ? detail.slice(detail.indexOf(\": \") + 2) : detail;\n  return new NotEnoughMemory(what, num(\"needed\"), num(\"available\"), \"maxmemory\", script);\n}}\nif (kind === \"LayoutMismatch\") {{\n  return new LayoutMismatch(detail.split(\" \")[0], detail, \"\");\n}}\nswitch (kind) {{\n{cases}}}\nreturn new Script(script, code, detail);\n",
        m.typed(": string")
    );
    out.push('\n');
    let params = vec![
        P::new("code", "string"),
        P::new("detail", "string"),
        P::new("script", "string"),
    ];
    out.push_str(&m.function(&F::new(
        "The error a script's `-CODE detail` reply stands for.",
        "fromCode",
        params,
        "RedisPatternsError",
        body,
    )));
    out
}

/// The imports of `index` and its helper that wraps a handle in its class.
fn classes_header(m: Mode) -> String {
    let mut out = String::from("\n");
    out.push_str(&m.import_type("{ Cluster, Redis }", "ioredis"));
    out.push_str(&m.import_ns("c", "./checks", false));
    out.push_str(&m.import_ns("d", "./driver", false));
    out.push_str(&m.import_ns("h", "./hold", false));
    out.push_str(&m.import_ns("ops", "./ops", false));
    out.push_str(&m.import_type("* as r", "./records"));
    out.push('\n');
    out.push_str(&m.export_type(
        "An ioredis client: a standalone Redis or a Cluster.",
        "type Client = Redis | Cluster;\n",
    ));
    if m != Mode::Dts {
        let body = "return Object.assign(Object.create(cls.prototype), { run, core });\n";
        out.push_str(&format!(
            "\n/** A class's handle made from a runner and its core (no checks: they ran). */\nfunction wrap{}(cls{}, run{}, core{}){} {{\n{}}}\n",
            m.typed("<T extends object>"),
            m.typed(": { prototype: T }"),
            m.typed(": d.Runner"),
            m.typed(": unknown"),
            m.typed(": T"),
            indent(body, "  ")
        ));
    }
    out
}

/// The re-exports of `index`: errors, records, scripts and hashing.
fn classes_footer(m: Mode) -> String {
    let mut out = String::from("\n");
    match m {
        Mode::Js => {
            out.push_str("const errors = require(\"./errors\");\n");
            out.push_str("exports.RedisPatternsError = errors.RedisPatternsError;\n");
            for e in &api::Api::errors().errors {
                let _ = writeln!(out, "exports.{0} = errors.{0};", e.name);
            }
            out.push_str("exports.scripts = require(\"./scripts\");\nexports.hashing = require(\"./hashing\");\n");
        }
        _ => out.push_str(
            "export * from \"./errors\";\nexport type * from \"./records\";\nexport * as scripts from \"./scripts\";\nexport * as hashing from \"./hashing\";\n",
        ),
    }
    out
}
