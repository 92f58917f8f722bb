// (filled in by the trace work)
