from lernie_ref.cli import entry

entry()
