"""certify.io: how mdcert writes files: one atomic writer (`certify.io.atomic`) and one JSON encoder
(`certify.io.jsonenc`), used by every command's outputs (docs/formats.md, "Outputs are atomic").

The two modules are imported by name (``from certify.io.atomic import write_text_atomic``); this
package imports nothing, so importing the trusted checker does not load them.
"""

__all__: list[str] = []
