"""The steps of the loop, one module each: prepare, call model, dispatch tools, finalize."""
