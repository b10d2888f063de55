"""Running past one machine: the deployment artefacts (deploy/) and the engines' failure behaviour."""
