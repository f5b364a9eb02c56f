"""Framework integrations, each an optional extra imported only by its users:
``costtrack.integrations.langchain`` (``pip install "costtrack[langchain]"``) and
``costtrack.integrations.litellm``. ``import costtrack`` never imports a framework."""

from typing import List

__all__: List[str] = []
