# (filled in by the interpreter work)
