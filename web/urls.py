from django.urls import path, re_path

from web import views

urlpatterns = [
    path("", views.index, name="index"),
    # Any other path but the admin's (whose "/admin" Django still redirects to "/admin/").
    re_path(r"^(?!admin(?:/|$))(?P<path>.*)$", views.not_found, name="not-found"),
]
