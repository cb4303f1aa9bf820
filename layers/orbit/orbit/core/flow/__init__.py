"""Flow control, the pure part: declarations (`spec`), what a start or an attempt must pass and what
a commit gives back (`gates`), the waiting line's order (`order`), token buckets (`bucket`)."""
