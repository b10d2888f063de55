"""A language model served on this machine: llama.cpp's ``llama-server`` and verified weights.

``catalog`` pins what is built and served (engine source, build flags, weight packages, sizes and
digests); ``engine`` builds the server once per version and flags; ``weights`` assembles and
verifies the model file; ``server`` runs it on loopback; ``telemetry`` reads what it reports.
The ``local_model`` management command drives them (``bin/setup --with-local-model``, the
``Procfile``'s ``model`` process).
"""
