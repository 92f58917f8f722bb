# (filled in by the passes work)
