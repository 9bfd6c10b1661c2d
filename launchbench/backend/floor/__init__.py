"""The launch path measured layer by layer (``launchbench floor``): the native C floor over the driver
API, cuda-bindings from Python, CuPy's RawKernel, ElementwiseKernel and ufunc dispatch, a torch op, each
eagerly and as a graph, and the GPU's own per-node floor. One module per kind of layer; ``build.py``
maps the scenario's layer names to them."""
