from django.urls import path

from memories import apis

app_name = "memories"
urlpatterns = [
    path("memories/proposals", apis.ProposalSubmitApi.as_view(), name="proposals"),
    path("memories/stm", apis.StmListApi.as_view(), name="stm"),
    path("memories/<str:item_id>", apis.MemoryItemApi.as_view(), name="item"),
]
