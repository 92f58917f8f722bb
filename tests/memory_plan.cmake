# (filled in by the memory_plan work)
