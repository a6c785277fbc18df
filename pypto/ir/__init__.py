"""Graph levels of the compiler: expressions, the Tensor Graph, printers."""
