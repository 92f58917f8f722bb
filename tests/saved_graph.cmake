# (filled in by the saved_graph work)
