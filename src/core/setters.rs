//! The builders' infallible setters, written once: [`setters!`] writes
//! `pub fn name(mut self, arg: Type) -> Self` for every line it is given,
//! with that line's doc comment (the builders check everything in `build`).

/// Writes one builder setter per line, each with its doc comment:
/// `name(arg: Type) => field;` sets `self.field = arg`, a field path
/// (`policy.attempts`) a nested field, and `=> field = expr;` stores `expr`
/// (made of `arg`) instead.
///
/// ```ignore
/// impl ExampleBuilder {
///     setters! {
///         /// The key prefix (default [`DEFAULT_PREFIX`]).
///         prefix(prefix: Prefix) => prefix;
///         /// The number of items it is sized for.
///         expected(items: u64) => expected = Some(items);
///         /// How many times a command is sent at most.
///         attempts(attempts: u32) => policy.attempts;
///     }
/// }
/// ```
macro_rules! setters {
    ($(
        $(#[$doc:meta])*
        $name:ident($arg:ident: $ty:ty) => $($field:ident).+ $(= $value:expr)?;
    )*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $arg: $ty) -> Self {
                $(let $arg = $value;)?
                self.$($field).+ = $arg;
                self
            }
        )*
    };
}
pub(crate) use setters;
