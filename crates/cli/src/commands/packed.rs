//! `redis-patterns packed get|set`: fixed-width records per integer id in
//! sharded strings, their layout (width, ids per shard) stored in
//! `<name>:meta`.

use redis_patterns::packed::{Bytes, PackedLayout, PackedRecords};
use redis_patterns::{Connection, Request};
use serde::Serialize;

use crate::conn::At;
use crate::fail::{CliResult, Failure};
use crate::out;

/// The layout of records written without a stored one, and how values read.
#[derive(clap::Args, Debug, Clone)]
pub struct PackedArgs {
    /// Record width in bytes, for a new store or data written without a
    /// stored layout (e.g. by the PHP byte-packing recipe); refused when
    /// another layout is stored.
    #[arg(long)]
    width: Option<u64>,
    /// Records per shard string (default: as many as fit in 65,530 bytes).
    #[arg(long, requires = "width")]
    ids_per_shard: Option<u64>,
    /// The largest id.
    #[arg(long, default_value_t = u32::MAX as u64)]
    max_id: u64,
    /// Values as hex bytes instead of little-endian unsigned integers.
    #[arg(long)]
    hex: bool,
}

#[derive(clap::Subcommand)]
pub enum PackedCommand {
    /// Print the records of ids (never written ones read as 0).
    Get {
        name: String,
        #[arg(required = true)]
        ids: Vec<u64>,
        #[command(flatten)]
        at: At<PackedArgs>,
    },
    /// Write the record of one id.
    Set {
        name: String,
        id: u64,
        /// A little-endian unsigned integer (or hex bytes with --hex).
        value: String,
        #[command(flatten)]
        at: At<PackedArgs>,
    },
}

impl At<PackedArgs> {
    /// The connection, then the store `name` on it (see [`open`]).
    fn store(&self, name: &str, write: bool) -> CliResult<(PackedRecords<Bytes>, Connection)> {
        let mut con = self.url.connect()?;
        let store = open(&mut con, name, &self.pattern, write)?;
        Ok((store, con))
    }
}

/// The store: the stored layout, or the one the arguments name.
fn open(
    con: &mut Connection,
    name: &str,
    args: &PackedArgs,
    write: bool,
) -> CliResult<PackedRecords<Bytes>> {
    let stored = PackedRecords::<Bytes>::stored_layout(name).run(con)?;
    let asked = |width: u64| -> CliResult<PackedRecords<Bytes>> {
        let mut b =
            PackedRecords::builder(name, Bytes(width as usize), args.max_id).record_layout(write);
        if let Some(n) = args.ids_per_shard {
            b = b.ids_per_shard(n);
        }
        Ok(b.build()?)
    };
    match (stored, args.width) {
        (Some(s), None) => Ok(
            PackedRecords::builder(name, Bytes(s.width as usize), args.max_id)
                .ids_per_shard(s.ids_per_shard)
                .record_layout(write)
                .build()?,
        ),
        (stored, Some(width)) => {
            let store = asked(width)?;
            if let Some(s) = stored {
                s.layout()
                    .check(&store.meta_key(), &store.packed_layout().layout())
                    .map_err(|e| {
                        Failure::new(format!(
                            "refused: {}: drop --width and --ids-per-shard to use the stored layout",
                            crate::fail::describe(&e)
                        ))
                    })?;
            }
            Ok(store)
        }
        (None, None) => Err(Failure::new(format!(
            "{name} has no stored layout ({name}:meta is absent): name it with --width W [--ids-per-shard N]"
        ))),
    }
}

fn encode(value: &str, width: usize, hex: bool) -> CliResult<Vec<u8>> {
    if hex {
        let clean: String = value.chars().filter(|c| !c.is_whitespace()).collect();
        let bytes = (0..clean.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(clean.get(i..i + 2).unwrap_or("x"), 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| Failure::new(format!("{value} is not hex bytes")))?;
        if bytes.len() != width {
            return Err(Failure::new(format!(
                "{value} is {} bytes, the records are {width}",
                bytes.len()
            )));
        }
        return Ok(bytes);
    }
    let n: u64 = value.parse().map_err(|_| {
        Failure::new(format!(
            "{value} is not an unsigned integer (or pass --hex)"
        ))
    })?;
    if width > 8 || (width < 8 && n >> (8 * width) != 0) {
        return Err(Failure::new(format!(
            "{n} does not fit in {width} bytes (pass --hex for wider records)"
        )));
    }
    Ok(n.to_le_bytes()[..width].to_vec())
}

/// One record, for output.
#[derive(Serialize)]
struct Record {
    id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<u64>,
    hex: String,
}

fn record(id: u64, bytes: &[u8]) -> Record {
    let value = (bytes.len() <= 8).then(|| {
        let mut b = [0u8; 8];
        b[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(b)
    });
    Record {
        id,
        value,
        hex: bytes.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

pub fn run(command: PackedCommand) -> CliResult {
    match command {
        PackedCommand::Get { name, ids, at } => {
            let (store, mut con) = at.store(&name, false)?;
            let values = store.get_many(&ids).run(&mut con)?;
            for (id, bytes) in ids.iter().zip(values) {
                let r = record(*id, &bytes);
                if out::json() {
                    out::json_line(&r);
                } else if at.pattern.hex || r.value.is_none() {
                    out::line(&format!("{id}\t{}", r.hex));
                } else {
                    out::line(&format!("{id}\t{}", r.value.unwrap_or(0)));
                }
            }
            Ok(())
        }
        PackedCommand::Set {
            name,
            id,
            value,
            at,
        } => {
            let (store, mut con) = at.store(&name, true)?;
            let bytes = encode(&value, store.width(), at.pattern.hex)?;
            store.set(id, &bytes).run(&mut con)?;
            let layout: PackedLayout = store.packed_layout();
            out::emit(&serde_json::json!({"id": id, "layout": layout}), || {
                let (key, offset) = store.locate(id).unwrap_or_default();
                vec![format!(
                    "set id {id}: {} bytes at offset {offset} of {key}",
                    store.width()
                )]
            });
            Ok(())
        }
    }
}
