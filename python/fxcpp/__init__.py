"""Python's half of fxcpp's file formats: what torch.fx needs to read and write
the GraphModules that fxcpp (PyTorch FX in C++) saves."""
