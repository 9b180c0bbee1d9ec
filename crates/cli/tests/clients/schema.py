"""Validates a manifest against manifest.schema.json. Usage: schema.py SCHEMA MANIFEST"""

import json
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("the Python module `jsonschema` is missing: python3 -m pip install --target DIR jsonschema, with DIR on PYTHONPATH (.ci/run does)")

with open(sys.argv[1]) as f:
    schema = json.load(f)
with open(sys.argv[2]) as f:
    manifest = json.load(f)
jsonschema.Draft202012Validator.check_schema(schema)
jsonschema.Draft202012Validator(schema).validate(manifest)
print(f"manifest valid: {len(manifest['scripts'])} scripts, {len(manifest['patterns'])} patterns")
