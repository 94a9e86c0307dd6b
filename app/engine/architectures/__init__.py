"""The architecture builders: one module per model family, each turning a Hugging Face
``config.json`` into an exact :class:`~app.engine.shapes.ModelShape`.

``kit`` holds what they share (the bounded config reader, attention dimensions, the gated MLP,
fused experts, the assembly of a shape); ``registry`` maps each ``model_type`` to its builder
(``parse_config``); ``approximate`` counts a model type no builder knows (``shape_of``).
"""
